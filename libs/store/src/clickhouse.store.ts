import { createHash } from 'node:crypto';
import type { DriverHealth } from '@cdp/contracts';
import { AnalyticStore, type CustomerRow, type EventRow, type StoreBatch } from './analytic-store.port.js';
import type { ClickHouseTransport } from './clickhouse-transport.js';
import { EVENT_COLUMN_FIELDS } from '@cdp/domain';
import { CUSTOMER_COLUMNS, accountTables, databaseName } from './schema.sql.js';

type TableName = keyof typeof TABLES;

/** Insert order matters: links first, so a crash never leaves events whose customer cannot be resolved. */
const TABLES = { identityLinks: 'identity_links', customers: 'customers', events: 'events' } as const;

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
      let rows: { msg_id: string }[] = batch[key];
      if (rows.length === 0) continue;
      if (redelivery) {
        const present = await this.storedMessages(table, rows);
        rows = rows.filter((r) => !present.has(r.msg_id));
        if (rows.length === 0) continue;
      }
      // Events, the bulk of every batch, go as arrays: cheaper to write and for the engine to read.
      const compact = key === 'events';
      const body = rows.map((r) => (compact ? eventArray(r as EventRow) : toStoreLine(key, r))).join('\n');
      const settings = {
        insert_deduplication_token: dedupToken(table, rows),
        // One block per insert: the insert is then atomic, so a message is wholly in a table or not at all.
        input_format_parallel_parsing: 0,
      };
      await this.transport.insert(table, body, settings, compact ? EVENT_INSERT_COLUMNS : undefined);
    }
  }

  private async storedMessages(table: string, rows: { msg_id: string }[]): Promise<Set<string>> {
    const ids = [...new Set(rows.map((r) => r.msg_id))];
    const found = await this.transport.query<{ msg_id: string }>(
      `SELECT DISTINCT msg_id FROM ${table} WHERE msg_id IN {ids:Array(String)}`,
      { ids },
    );
    return new Set(found.map((r) => r.msg_id));
  }

  async *identityLinks(account: string): AsyncIterable<{ kind: string; value: string; svc_id: string }> {
    await this.ensureAccount(account);
    yield* this.transport.stream<{ kind: string; value: string; svc_id: string }>(
      `SELECT kind, value, argMin(svc_id, (created_at, msg_id)) AS svc_id
       FROM ${databaseName(account)}.identity_links GROUP BY kind, value`,
    );
  }

  async *currentProfiles(
    account: string,
  ): AsyncIterable<{ svc_id: string; version: number; attributes: Record<string, string | boolean> }> {
    await this.ensureAccount(account);
    const rows = this.transport.stream<Record<string, string | boolean | number | null>>(
      `SELECT svc_id, version, ${CUSTOMER_COLUMNS.join(', ')} FROM ${databaseName(account)}.customers FINAL`,
    );
    for await (const row of rows) {
      const attributes: Record<string, string | boolean> = {};
      for (const column of CUSTOMER_COLUMNS) {
        const value = row[column];
        if (value !== null && value !== undefined) attributes[column] = value as string | boolean;
      }
      yield { svc_id: String(row.svc_id), version: Number(row.version), attributes };
    }
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
  return JSON.stringify(row);
}

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

function eventArray(e: EventRow): string {
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
  return JSON.stringify(values);
}

/** The same rows give the same token, so the engine drops a repeated insert of them. */
function dedupToken(table: string, rows: { msg_id: string }[]): string {
  const ids = [...new Set(rows.map((r) => r.msg_id))].sort();
  return createHash('sha256').update(table).update('\u0000').update(ids.join('\u0000')).digest('hex');
}
