import { createHash } from 'node:crypto';
import type { DriverHealth } from '@cdp/contracts';
import {
  AnalyticStore,
  type CustomerRow,
  type EventRow,
  type OrderChangeRow,
  type OrderRow,
  type ProductRow,
  type StoreBatch,
} from './analytic-store.port.js';
import type { ClickHouseTransport } from './clickhouse-transport.js';
import { EVENT_COLUMN_FIELDS, toStoreTime } from '@cdp/domain';
import { FAULT_POINTS, faultPoint, storeInsertPoint, type STORE_TABLES } from '@cdp/faults';
import { COMMITS_TABLE, CUSTOMER_COLUMNS, accountTables, databaseName } from './schema.sql.js';
import { addColumnSql, objectTableSql, sqlName, type ColumnSpec } from './custom-columns.sql.js';

type TableName = keyof typeof TABLES;

/**
 * The tables a batch appends to, in insert order. Crash consistency does not depend on this order
 * (begin/commit brackets make a cut-short message invisible to rebuilds); links first only makes
 * reads in between find a customer for every stored event.
 */
const TABLES = {
  identityLinks: 'identity_links',
  merges: 'identity_merges',
  conflicts: 'identity_conflicts',
  customers: 'customers',
  // The change log before what derives from it, so a crash never leaves a summary its log cannot rebuild.
  orderChanges: 'order_changes',
  events: 'events',
  lineItems: 'line_items',
  orders: 'orders',
  products: 'products',
} as const;

/** What a rebuild reads: rows of every message but the unfinished ones (see AnalyticStore.begin). */
const COUNTED = 'WHERE msg_id NOT IN {unfinished:Array(String)}';

/** The analytic store in ClickHouse SQL, over whichever transport the configuration chose. */
export class ClickHouseStore extends AnalyticStore {
  private readonly ready = new Map<string, Promise<void>>();

  constructor(private readonly transport: ClickHouseTransport) {
    super();
  }

  async ensureAccount(account: string): Promise<void> {
    let done = this.ready.get(account);
    if (!done) {
      const db = databaseName(account);
      done = (async () => {
        for (const statement of accountTables(db)) await this.transport.exec(statement);
      })();
      done.catch(() => this.ready.delete(account));
      this.ready.set(account, done);
    }
    await done;
  }

  async write(account: string, batch: StoreBatch, redelivery: boolean): Promise<void> {
    await this.ensureAccount(account);
    const db = databaseName(account);
    for (const key of Object.keys(TABLES) as TableName[]) {
      const table = `${db}.${TABLES[key]}`;
      let rows: { msg_id: string }[] = batch[key] ?? [];
      if (rows.length === 0) continue;
      if (redelivery) {
        const present = await this.storedMessages(table, rows);
        rows = rows.filter((r) => !present.has(r.msg_id));
        if (rows.length === 0) continue;
      }
      // Events, the bulk of every batch, go as arrays: cheaper to write and for the engine to read.
      const compact = key === 'events';
      // Custom event fields (spec "Custom objects and fields") follow the built-in columns.
      const custom = compact ? customEventColumns(rows as EventRow[]) : [];
      const body = rows
        .map((r) => (compact ? eventArray(r as EventRow, custom) : toStoreLine(key, r)))
        .join('\n');
      const settings = {
        insert_deduplication_token: dedupToken(table, rows),
        // One block per insert: the insert is then atomic, so a message is wholly in a table or not at all.
        input_format_parallel_parsing: 0,
      };
      faultPoint(storeInsertPoint(TABLES[key]));
      await this.transport.insert(
        table,
        body,
        settings,
        compact ? [...EVENT_INSERT_COLUMNS, ...custom] : undefined,
      );
    }
    // Consent changes last: a batch that failed before them is redelivered and writes them then.
    await this.appendRows(db, 'consent_history', batch.consentHistory ?? [], redelivery);
    await this.appendRows(db, 'identifier_updates', batch.identifierUpdates ?? [], redelivery);
    await this.appendRows(db, 'optout_pool', batch.optoutPool ?? [], redelivery);
    // The audit row last: it says the opt-out was done.
    await this.appendRows(db, 'optout_requests', batch.optoutRequests ?? [], redelivery);
  }

  begin(account: string, messages: readonly string[]): Promise<void> {
    return this.bracket(account, messages, 0);
  }

  commit(account: string, messages: readonly string[]): Promise<void> {
    return this.bracket(account, messages, 1);
  }

  private async bracket(account: string, messages: readonly string[], done: 0 | 1): Promise<void> {
    const ids = [...new Set(messages)];
    if (ids.length === 0) return;
    await this.ensureAccount(account);
    const table = `${databaseName(account)}.${COMMITS_TABLE}`;
    const at = toStoreTime(Date.now());
    faultPoint(done ? storeInsertPoint('ingest_commits') : FAULT_POINTS.storeBegin);
    await this.transport.insert(table, ids.map((msg_id) => JSON.stringify({ msg_id, done, at })).join('\n'), {
      insert_deduplication_token: dedupToken(
        `${table}:${done}`,
        ids.map((msg_id) => ({ msg_id })),
      ),
      input_format_parallel_parsing: 0,
    });
  }

  async unfinishedMessages(account: string): Promise<string[]> {
    await this.ensureAccount(account);
    const rows = await this.transport.query<{ msg_id: string }>(
      `SELECT msg_id FROM ${databaseName(account)}.${COMMITS_TABLE} GROUP BY msg_id HAVING max(done) = 0`,
    );
    return rows.map((r) => r.msg_id);
  }

  async redactCustomers(account: string, customerIds: readonly string[]): Promise<void> {
    if (customerIds.length === 0) return;
    await this.ensureAccount(account);
    const db = databaseName(account);
    const merged = await this.transport.query<{ svc_id: string }>(
      `SELECT svc_id FROM ${db}.customer_survivors WHERE survivor IN {ids:Array(String)}`,
      { ids: [...customerIds] },
    );
    const all = [...new Set([...customerIds, ...merged.map((m) => m.svc_id)])];
    const described = await this.transport.query<{ name: string }>(`DESCRIBE TABLE ${db}.customers`);
    const keep = new Set([
      'svc_id',
      'version',
      'msg_id',
      'updated_at',
      'merged_into',
      'redacted',
      'opted_in',
    ]);
    const cleared = described.filter((c) => !keep.has(c.name)).map((c) => `${sqlName(c.name)} = NULL`);
    // A mutation rewrites the parts holding these rows; mutations_sync waits for it, so once this
    // returns no snapshot row (FINAL or not) holds their personal data.
    await this.transport.exec(
      `ALTER TABLE ${db}.customers UPDATE ${[...cleared, 'redacted = true'].join(', ')}
       WHERE svc_id IN (${all.map(sqlString).join(', ')}) SETTINGS mutations_sync = 2`,
    );
  }

  async *optOutPool(account: string): AsyncIterable<{ kind: string; value: string }> {
    const unfinished = await this.unfinishedMessages(account);
    yield* this.transport.stream<{ kind: string; value: string }>(
      `SELECT DISTINCT kind, value FROM ${databaseName(account)}.optout_pool ${COUNTED}`,
      { unfinished },
    );
  }

  /** Appends plain rows to a table, once per message (deduplication token, stored-message check). */
  private async appendRows(
    db: string,
    name: (typeof STORE_TABLES)[number],
    all: { msg_id: string }[],
    redelivery: boolean,
  ): Promise<void> {
    const table = `${db}.${name}`;
    let rows = all;
    if (redelivery && rows.length) {
      const present = await this.storedMessages(table, rows);
      rows = rows.filter((r) => !present.has(r.msg_id));
    }
    if (rows.length === 0) return;
    faultPoint(storeInsertPoint(name));
    await this.transport.insert(table, rows.map((r) => JSON.stringify(r)).join('\n'), {
      insert_deduplication_token: dedupToken(table, rows),
      input_format_parallel_parsing: 0,
    });
  }

  async addColumns(account: string, table: string, columns: readonly ColumnSpec[]): Promise<void> {
    await this.ensureAccount(account);
    const db = databaseName(account);
    for (const column of columns) await this.transport.exec(addColumnSql(db, table, column));
  }

  async ensureObjectTable(account: string, table: string, columns: readonly ColumnSpec[]): Promise<void> {
    await this.ensureAccount(account);
    for (const statement of objectTableSql(databaseName(account), table, columns))
      await this.transport.exec(statement);
  }

  async writeObjects(
    account: string,
    table: string,
    rows: readonly ({ _msg_id: string } & Record<string, unknown>)[],
    redelivery: boolean,
  ): Promise<void> {
    await this.ensureAccount(account);
    const target = `${databaseName(account)}.${sqlName(table)}`;
    let pending = rows;
    if (redelivery) {
      const ids = [...new Set(rows.map((r) => r._msg_id))];
      const found = await this.transport.query<{ m: string }>(
        `SELECT DISTINCT _msg_id AS m FROM ${target} WHERE _msg_id IN {ids:Array(String)}`,
        { ids },
      );
      const present = new Set(found.map((r) => r.m));
      pending = rows.filter((r) => !present.has(r._msg_id));
    }
    if (pending.length === 0) return;
    faultPoint(storeInsertPoint('objects'));
    await this.transport.insert(target, pending.map((r) => JSON.stringify(r)).join('\n'), {
      insert_deduplication_token: dedupToken(
        target,
        pending.map((r) => ({ msg_id: r._msg_id })),
      ),
      input_format_parallel_parsing: 0,
    });
  }

  private async storedMessages(table: string, rows: { msg_id: string }[]): Promise<Set<string>> {
    const ids = [...new Set(rows.map((r) => r.msg_id))];
    const found = await this.transport.query<{ msg_id: string }>(
      `SELECT DISTINCT msg_id FROM ${table} WHERE msg_id IN {ids:Array(String)}`,
      { ids },
    );
    return new Set(found.map((r) => r.msg_id));
  }

  identityGraph(account: string): {
    links: AsyncIterable<{ kind: string; value: string; svc_id: string; born: string }>;
    merges: AsyncIterable<{ loser: string; survivor: string; seq: number }>;
  } {
    return { links: this.links(account), merges: this.merges(account) };
  }

  /** Each identifier with its first owner; in link order, so a rebuilt index meets customers as they came. */
  private async *links(
    account: string,
  ): AsyncIterable<{ kind: string; value: string; svc_id: string; born: string }> {
    const unfinished = await this.unfinishedMessages(account);
    yield* this.transport.stream<{ kind: string; value: string; svc_id: string; born: string }>(
      `SELECT kind, value, argMin(svc_id, (created_at, msg_id)) AS svc_id, argMin(born, (created_at, msg_id)) AS born
       FROM ${databaseName(account)}.identity_links ${COUNTED}
       GROUP BY kind, value ORDER BY min(created_at), kind, value`,
      { unfinished },
    );
  }

  private async *merges(account: string): AsyncIterable<{ loser: string; survivor: string; seq: number }> {
    const unfinished = await this.unfinishedMessages(account);
    const rows = this.transport.stream<{ loser: string; survivor: string; seq: number | string }>(
      `SELECT DISTINCT loser, survivor, seq FROM ${databaseName(account)}.identity_merges ${COUNTED}
       ORDER BY seq, loser`,
      { unfinished },
    );
    for await (const m of rows) yield { loser: m.loser, survivor: m.survivor, seq: Number(m.seq) };
  }

  async *currentProfiles(account: string): AsyncIterable<{
    svc_id: string;
    version: number;
    attributes: Record<string, string | boolean | number>;
    redacted?: boolean;
  }> {
    const unfinished = await this.unfinishedMessages(account);
    const table = `${databaseName(account)}.customers`;
    // Custom fields are columns added after the built-in ones; custom timestamps go back to unix seconds.
    const described = await this.transport.query<{ name: string; type: string }>(`DESCRIBE TABLE ${table}`);
    const builtin = new Set([
      'svc_id',
      'version',
      'msg_id',
      'updated_at',
      'merged_into',
      'redacted',
      ...CUSTOMER_COLUMNS,
    ]);
    const custom = described.filter((c) => !builtin.has(c.name));
    const customSql = custom.map((c) =>
      c.type.includes('DateTime64')
        ? `toUnixTimestamp64Milli(${sqlName(c.name)}) / 1000 AS ${c.name}`
        : sqlName(c.name),
    );
    const columns = [...CUSTOMER_COLUMNS, ...custom.map((c) => c.name)];
    // Each customer's latest snapshot (what FINAL keeps), if it is not merged away. Snapshots of
    // unfinished messages cannot simply be left out here: the table is a ReplacingMergeTree, and a
    // background merge may at any time fold a customer's older, counted snapshots into the newest one,
    // which may be an unfinished message's (leaving it out would lose the customer, or bring back a
    // stale snapshot). Such a snapshot is the finished state plus that message's own changes, which its
    // redelivery applies again to the same result (attribute updates and merges are idempotent). So:
    // - a counted latest snapshot counts as stored;
    // - an unfinished latest snapshot counts for a customer the finished messages know (a counted
    //   link), as live (a merge it records is unfinished: the redelivery makes it again); one of a
    //   customer only unfinished messages know is left out, as the index leaves that customer out.
    const rows = this.transport.stream<Record<string, string | boolean | number | null>>(
      `SELECT * FROM (
         SELECT ${['svc_id', 'version', 'redacted', 'merged_into', ...CUSTOMER_COLUMNS, ...customSql].join(', ')},
                msg_id IN {unfinished:Array(String)} AS unfinished_snapshot
         FROM ${table} ORDER BY svc_id, version DESC, updated_at DESC LIMIT 1 BY svc_id
       ) WHERE (NOT unfinished_snapshot AND merged_into IS NULL)
            OR (unfinished_snapshot AND svc_id IN (
                  SELECT svc_id FROM ${databaseName(account)}.identity_links ${COUNTED}
                  AND svc_id IN (SELECT svc_id FROM ${table} WHERE msg_id IN {unfinished:Array(String)})))`,
      { unfinished },
    );
    for await (const row of rows) {
      const attributes: Record<string, string | boolean | number> = {};
      for (const column of columns) {
        const value = row[column];
        if (value !== null && value !== undefined) attributes[column] = value;
      }
      const profile = { svc_id: String(row.svc_id), version: Number(row.version), attributes };
      yield row.redacted === true || row.redacted === 1 ? { ...profile, redacted: true } : profile;
    }
  }

  async *consentStates(
    account: string,
  ): AsyncIterable<{ svc_id: string; list_id: string; subscribed: boolean; version: number }> {
    const unfinished = await this.unfinishedMessages(account);
    const rows = this.transport.stream<{
      svc_id: string;
      list_id: string;
      subscribed: boolean;
      latest: string;
    }>(
      `SELECT svc_id, list_id, argMax(subscribed, version) AS subscribed, max(version) AS latest
       FROM ${databaseName(account)}.consent_history ${COUNTED}
       -- consent of a push token (POST /v3/consent) is the identifier's, not a list membership
       AND source != 'identifier_consent'
       GROUP BY svc_id, list_id`,
      { unfinished },
    );
    for await (const r of rows) {
      yield {
        svc_id: r.svc_id,
        list_id: r.list_id,
        subscribed: Boolean(r.subscribed),
        version: Number(r.latest),
      };
    }
  }

  async *identifierUpdates(
    account: string,
  ): AsyncIterable<{ field: string; value: string; version: number; change: string }> {
    const unfinished = await this.unfinishedMessages(account);
    // LIMIT 1 BY: a change is replayed once, even if an insert was ever repeated outside the dedup window.
    const rows = this.transport.stream<{ field: string; value: string; version: string; change: string }>(
      `SELECT field, value, version, change FROM ${databaseName(account)}.identifier_updates ${COUNTED}
       ORDER BY field, value, version LIMIT 1 BY field, value, version`,
      { unfinished },
    );
    for await (const r of rows)
      yield { field: r.field, value: r.value, version: Number(r.version), change: r.change };
  }

  async *orderChanges(account: string): AsyncIterable<OrderChangeRow> {
    const unfinished = await this.unfinishedMessages(account);
    // LIMIT 1 BY: a change is in the log once, even if an insert was ever repeated outside the dedup window.
    yield* this.transport.stream<OrderChangeRow>(
      `SELECT change_id, msg_id, order_id, seq, kind, action, ts_ms, svc_id, subtotal, total, fields
       FROM ${databaseName(account)}.order_changes ${COUNTED} ORDER BY order_id, seq LIMIT 1 BY order_id, seq`,
      { unfinished },
    );
  }

  async products(account: string, productIds: string[]): Promise<ProductRow[]> {
    if (productIds.length === 0) return [];
    await this.ensureAccount(account);
    // Every column: custom product fields have theirs beside the spec's, and an update keeps them too.
    const rows = await this.transport.query<Record<string, string | number | boolean | null>>(
      `SELECT * FROM ${databaseName(account)}.products FINAL WHERE product_id IN {ids:Array(String)}`,
      { ids: productIds },
    );
    return rows.map((row) => {
      const fields: Record<string, string | number | boolean> = {};
      for (const [column, value] of Object.entries(row)) {
        if (PRODUCT_META_COLUMNS.has(column)) continue;
        if (value !== null && value !== undefined) fields[column] = value;
      }
      return {
        product_id: String(row.product_id),
        version: Number(row.version),
        msg_id: String(row.msg_id),
        updated_at: String(row.updated_at),
        fields,
      };
    });
  }

  async execute(account: string, sql: string): Promise<void> {
    await this.ensureAccount(account);
    await this.transport.exec(sql.replaceAll('{db}', databaseName(account)));
  }

  async query<T>(account: string, sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    await this.ensureAccount(account);
    return this.transport.query<T>(sql.replaceAll('{db}', databaseName(account)), params);
  }

  async writeParquet(
    account: string,
    sql: string,
    params: Record<string, unknown>,
    path: string,
  ): Promise<void> {
    await this.ensureAccount(account);
    await this.transport.writeParquet(sql.replaceAll('{db}', databaseName(account)), params, path);
  }

  async health(): Promise<DriverHealth> {
    try {
      await this.transport.ping();
      return { driver: this.transport.name, ready: true };
    } catch (err) {
      return { driver: this.transport.name, ready: false, detail: String(err) };
    }
  }

  async close(): Promise<void> {
    await this.transport.close();
  }
}

/**
 * One JSONEachRow line. The nested field map (profile attributes, event data) becomes top-level
 * columns by joining the two serialisations: spreading them into a new object per row cost more
 * than the insert itself.
 */
function toStoreLine(table: TableName, row: { msg_id: string }): string {
  if (table === 'customers') {
    const { attributes, ...rest } = row as CustomerRow;
    return joinJson(rest, attributes);
  }
  if (table === 'events') {
    const { data, ...rest } = row as EventRow;
    return joinJson(rest, data);
  }
  if (table === 'orders' || table === 'products') {
    const { fields, ...rest } = row as OrderRow | ProductRow;
    return joinJson(rest, fields);
  }
  return JSON.stringify(row);
}

/** Columns of `products` that are not a product's field. */
const PRODUCT_META_COLUMNS = new Set(['product_id', 'version', 'msg_id', 'updated_at']);

function joinJson(head: object, tail: object): string {
  const a = JSON.stringify(head);
  const b = JSON.stringify(tail);
  return b.length === 2 ? a : `${a.slice(0, -1)},${b.slice(1)}`;
}

const EVENT_INSERT_COLUMNS = [
  'event_id',
  'msg_id',
  'svc_id',
  'ts',
  'received_at',
  'type',
  'action',
  'channel',
  'identifiers',
  ...EVENT_COLUMN_FIELDS,
  'order',
];

const EVENT_COLUMN_SET = new Set(EVENT_COLUMN_FIELDS);

/** Data fields of a batch's events that are not built-in columns: the account's custom event fields. */
function customEventColumns(rows: readonly EventRow[]): string[] {
  const names = new Set<string>();
  for (const row of rows) for (const name in row.data) if (!EVENT_COLUMN_SET.has(name)) names.add(name);
  return [...names];
}

function eventArray(e: EventRow, custom: readonly string[] = []): string {
  const data = e.data;
  const values: unknown[] = [
    e.event_id,
    e.msg_id,
    e.svc_id,
    e.ts,
    e.received_at,
    e.type,
    e.action,
    e.channel,
    e.identifiers,
  ];
  for (const field of EVENT_COLUMN_FIELDS) values.push(data[field] ?? null);
  values.push(e.order);
  for (const field of custom) values.push(data[field] ?? null);
  return JSON.stringify(values);
}

/** The same rows give the same token, so the engine drops a repeated insert of them. */
function dedupToken(table: string, rows: { msg_id: string }[]): string {
  const ids = [...new Set(rows.map((r) => r.msg_id))].sort();
  return createHash('sha256').update(table).update('\u0000').update(ids.join('\u0000')).digest('hex');
}

/** A string literal of ClickHouse SQL. */
function sqlString(value: string): string {
  return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}
