import type { DriverHealth } from '@cdp/contracts';
import { toStoreTime } from '@cdp/domain';
import { FAULT_POINTS, faultPoint, storeInsertPoint } from '@cdp/faults';
import {
  AnalyticStore,
  type CurrentProfile,
  type OrderChangeRow,
  type ProductRow,
  type RejectionRow,
  type StoreBatch,
} from './analytic-store.port.js';
import type { ClickHouseTransport } from './clickhouse-transport.js';
import { addColumnSql, objectTableSql, sqlName, type ColumnSpec } from './custom-columns.sql.js';
import { onceSettings, unstoredRows } from './dedup.js';
import * as rebuild from './rebuild-reads.js';
import { mutationSettings, redactCustomers, sqlString } from './redaction.js';
import { rowEncoder } from './row-encoding.js';
import {
  ACCOUNT_TABLES,
  COMMITS_TABLE,
  EVENTS,
  INGEST_REJECTIONS,
  LINE_ITEMS,
  PRODUCTS,
  RETAINED_TABLES,
  accountTables,
  databaseName,
} from './tables/account-tables.js';
import {
  SINGLE_NODE,
  localTable,
  mergeSettings,
  mutationTarget,
  retentionTtl,
  storeColumns,
  tableSql,
  type StoreLayout,
  type TableDeclaration,
} from './tables/table.js';

const encodeRejections = rowEncoder(INGEST_REJECTIONS);

/** The tables a batch writes, in write order (ACCOUNT_TABLES), each with its row encoder. */
const BATCH_TABLES = ACCOUNT_TABLES.flatMap((table) =>
  'batch' in table
    ? [
        {
          // A batch's tables are the crash points of the write path (STORE_TABLES); ingest_rejections has no `batch`.
          table: table as Exclude<typeof table, typeof INGEST_REJECTIONS>,
          key: table.batch as keyof StoreBatch,
          encode: rowEncoder(table),
        },
      ]
    : [],
);

/**
 * The analytic store in ClickHouse SQL, over whichever transport the configuration chose. The tables
 * are declared in tables/account-tables.ts; how rows are encoded, written once, redacted and read back
 * for rebuilds lives in row-encoding.ts, dedup.ts, redaction.ts and rebuild-reads.ts.
 */
export class ClickHouseStore extends AnalyticStore {
  private readonly ready = new Map<string, Promise<void>>();
  private readonly layout: StoreLayout;
  private readonly retention: RetentionSource | undefined;
  private readonly rebuildSliceRows: number;
  /** The retention each open account's tables enforce, and when the setting was last read. */
  private readonly retained = new Map<string, { days: number | null | undefined; readAt: number }>();
  /** The empty tables a never-written account's reads run against (created once, on the first such read). */
  private unwritten: Promise<void> | undefined;

  constructor(
    private readonly transport: ClickHouseTransport,
    options: StoreOptions = {},
  ) {
    super();
    this.layout = options.layout ?? SINGLE_NODE;
    this.retention = options.retention;
    this.rebuildSliceRows = options.rebuildSliceRows ?? rebuild.REBUILD_SLICE_ROWS;
  }

  /**
   * Creates the account's database and tables (or brings older ones up to date) and applies its events
   * retention. Called by every write: an account's tables exist from its first write, not its creation.
   */
  async ensureAccount(account: string): Promise<void> {
    let done = this.ready.get(account);
    if (!done) {
      const db = databaseName(account);
      done = (async () => {
        if (!(await this.upToDate(db, ACCOUNT_TABLES, [SURVIVORS_VIEW_COLUMN])))
          for (const statement of accountTables(db, this.layout)) await this.transport.exec(statement);
        await this.applyRetention(account, true);
      })();
      done.catch(() => this.ready.delete(account));
      this.ready.set(account, done);
    }
    await done;
  }

  /**
   * Whether database `db` already has these tables with every declared column and merge setting, and
   * the `other` columns (`table.column`; two queries): then opening it runs no DDL, where running the
   * idempotent statements (~80 for an account) costs most of a second each time a process first touches
   * the account, and on a cluster queues every one of them on every node. Custom columns are not
   * declared and not checked.
   */
  private async upToDate(
    db: string,
    tables: readonly TableDeclaration[],
    other: readonly string[] = [],
  ): Promise<boolean> {
    const rows = await this.transport.query<{ table: string; name: string }>(
      'SELECT table, name FROM system.columns WHERE database = {db:String}',
      { db },
    );
    if (rows.length === 0) return false;
    const present = new Set(rows.map((r) => `${r.table}.${r.name}`));
    const declared = [...declaredColumns(tables, this.layout), ...other];
    if (!declared.every((c) => present.has(c))) return false;
    const stored = await this.transport.query<{ name: string; engine_full: string }>(
      'SELECT name, engine_full FROM system.tables WHERE database = {db:String}',
      { db },
    );
    const engines = new Map(stored.map((t) => [t.name, t.engine_full]));
    return tables.every((table) =>
      mergeSettings(table).every((setting) =>
        engines.get(localTable(table.name, this.layout))?.includes(setting),
      ),
    );
  }

  /**
   * The database a read of the account runs in: its own once it was written (opened, and brought up to
   * date, on the first read), else an empty one with the same tables, so a never-written account
   * answers every read as empty without getting 14 tables for it.
   */
  private async readDatabase(account: string): Promise<string> {
    const db = databaseName(account);
    if (this.ready.has(account)) {
      await this.ensureAccount(account);
      return db;
    }
    const [found] = await this.transport.query<{ n: number }>(
      'SELECT count() AS n FROM system.databases WHERE name = {db:String}',
      { db },
    );
    if (Number(found?.n) > 0) {
      await this.ensureAccount(account);
      return db;
    }
    this.unwritten ??= (async () => {
      for (const statement of accountTables(UNWRITTEN_DB, this.layout)) await this.transport.exec(statement);
    })().catch((err: unknown) => {
      this.unwritten = undefined;
      throw err;
    });
    await this.unwritten;
    return UNWRITTEN_DB;
  }

  /**
   * Makes the account's retained tables (RETAINED_TABLES) enforce its events retention: a TTL of that
   * many days on their time column, none when it keeps events forever. The setting is read again at
   * most every RETENTION_CHECK_MS, so an operator's change reaches the store at the account's next write.
   */
  private async applyRetention(account: string, force = false): Promise<void> {
    if (!this.retention) return;
    const known = this.retained.get(account);
    const now = Date.now();
    if (!force && known && now - known.readAt < RETENTION_CHECK_MS) return;
    let days: number | null;
    try {
      days = await this.retention(account);
    } catch {
      // Where the setting lives (the metadata store) is away: the tables keep the TTL they have, and
      // writes go on; the setting is read again after RETENTION_CHECK_MS.
      this.retained.set(account, { days: known?.days, readAt: now });
      return;
    }
    if (!force && known && known.days === days) {
      known.readAt = now;
      return;
    }
    const db = databaseName(account);
    for (const table of RETAINED_TABLES) {
      // The engine's own TTL is what is enforced: compared with it, a setting is applied once, and a
      // table without a TTL is not asked to remove one (an error).
      if ((await this.enforcedRetention(db, localTable(table.name, this.layout))) === days) continue;
      const target = mutationTarget(db, table.name, this.layout);
      await this.transport.exec(
        days === null
          ? `ALTER TABLE ${target} REMOVE TTL`
          : `ALTER TABLE ${target} MODIFY TTL ${retentionTtl(table, days)}`,
      );
    }
    this.retained.set(account, { days, readAt: now });
  }

  /** The retention (days) a table's TTL enforces, as the engine reports it; `null` without a TTL. */
  private async enforcedRetention(db: string, table: string): Promise<number | null> {
    const [row] = await this.transport.query<{ engine_full: string }>(
      'SELECT engine_full FROM system.tables WHERE database = {db:String} AND name = {table:String}',
      { db, table },
    );
    const days = /\bTTL toDateTime\(\w+\) \+ toIntervalDay\((\d+)\)/.exec(row?.engine_full ?? '')?.[1];
    return days === undefined ? null : Number(days);
  }

  async write(account: string, batch: StoreBatch, redelivery: boolean): Promise<void> {
    await this.ensureAccount(account);
    await this.applyRetention(account);
    const db = databaseName(account);
    for (const { table, key, encode } of BATCH_TABLES) {
      const target = `${db}.${table.name}`;
      let rows: readonly { msg_id: string }[] = batch[key] ?? [];
      if (redelivery) rows = await unstoredRows(this.transport, target, rows, (r) => r.msg_id);
      if (rows.length === 0) continue;
      const { body, columns } = encode(rows);
      faultPoint(storeInsertPoint(table.name));
      await this.transport.insert({
        table: target,
        rows: body,
        settings: this.insertSettings(target, rows),
        columns,
      });
    }
  }

  async addRejections(account: string, rows: readonly RejectionRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.ensureAccount(account);
    const target = `${databaseName(account)}.${INGEST_REJECTIONS.name}`;
    const { body, columns } = encodeRejections(rows);
    await this.transport.insert({
      table: target,
      rows: body,
      settings: this.insertSettings(target, rows),
      columns,
    });
  }

  /**
   * Every insert's settings: its dedup token; no cap on the months one insert touches (a backfill of
   * years of events is one part per month, where the engine's default of 100 would refuse it every
   * time); and on a cluster a synchronous Distributed insert, so the rows are in their shards'
   * replicated tables (which deduplicate by the same token) when it returns.
   */
  private insertSettings(
    target: string,
    rows: readonly { msg_id: string }[],
  ): Record<string, string | number> {
    const settings = { ...onceSettings(target, rows), max_partitions_per_insert_block: 0 };
    return this.layout.cluster ? { ...settings, insert_distributed_sync: 1 } : settings;
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
    faultPoint(done ? storeInsertPoint(COMMITS_TABLE) : FAULT_POINTS.storeBegin);
    await this.transport.insert({
      table,
      rows: ids.map((msg_id) => JSON.stringify({ msg_id, done, at })).join('\n'),
      settings: this.insertSettings(
        `${table}:${done}`,
        ids.map((msg_id) => ({ msg_id })),
      ),
    });
  }

  async unfinishedMessages(account: string): Promise<string[]> {
    const db = await this.readDatabase(account);
    const rows = await this.transport.query<{ msg_id: string }>(
      `SELECT msg_id FROM ${db}.${COMMITS_TABLE} GROUP BY msg_id HAVING max(done) = 0`,
    );
    return rows.map((r) => r.msg_id);
  }

  async pruneCommits(account: string, before: number): Promise<number> {
    await this.ensureAccount(account);
    const db = databaseName(account);
    const table = `${db}.${COMMITS_TABLE}`;
    const target = mutationTarget(db, COMMITS_TABLE, this.layout);
    const committedBefore = `done = 1 AND at < fromUnixTimestamp64Milli(${Math.floor(before)}, 'UTC')`;
    const old = `SELECT msg_id FROM ${table} WHERE ${committedBefore}`;
    const [found] = await this.transport.query<{ n: number }>(
      `SELECT uniqExact(msg_id) AS n FROM ${table} WHERE ${committedBefore}`,
    );
    const n = Number(found?.n ?? 0);
    if (n === 0) return n;
    // Begins first, then commits, each mutation waited for: a mutation rewrites one part after another,
    // and a message whose commit row went before its begin row would read as unfinished in between.
    await this.transport.exec(
      `ALTER TABLE ${target} DELETE WHERE done = 0 AND msg_id IN (${old}) SETTINGS ${mutationSettings(this.layout)}`,
    );
    await this.transport.exec(
      `ALTER TABLE ${target} DELETE WHERE ${committedBefore} SETTINGS ${mutationSettings(this.layout)}`,
    );
    return n;
  }

  async redactCustomers(account: string, customerIds: readonly string[]): Promise<void> {
    if (customerIds.length === 0) return;
    await this.ensureAccount(account);
    await redactCustomers(this.transport, databaseName(account), customerIds, this.layout);
  }

  async deleteEvents(account: string, eventIds: readonly string[]): Promise<void> {
    if (eventIds.length === 0) return;
    await this.ensureAccount(account);
    const db = databaseName(account);
    // Literals, not parameters: a mutation sent ON CLUSTER carries none. As a redaction's, it names the
    // replicated tables on a cluster and waits until every part holding the rows is rewritten. Rare (two
    // purchases of one order processed out of acceptance order): its cost is taken rather than a filter
    // on every read of events.
    const ids = [...new Set(eventIds)].map(sqlString).join(', ');
    for (const table of [EVENTS.name, LINE_ITEMS.name])
      await this.transport.exec(
        `ALTER TABLE ${mutationTarget(db, table, this.layout)} DELETE WHERE event_id IN (${ids}) SETTINGS ${mutationSettings(this.layout)}`,
      );
  }

  async addColumns(account: string, table: string, columns: readonly ColumnSpec[]): Promise<void> {
    await this.ensureAccount(account);
    const db = databaseName(account);
    for (const column of columns)
      for (const statement of addColumnSql(db, table, column, this.layout))
        await this.transport.exec(statement);
  }

  async ensureObjectTable(account: string, table: string, columns: readonly ColumnSpec[]): Promise<void> {
    await this.ensureAccount(account);
    for (const statement of objectTableSql(databaseName(account), table, columns, this.layout))
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
    const pending = redelivery
      ? await unstoredRows(this.transport, target, rows, (r) => r._msg_id, '_msg_id')
      : rows;
    if (pending.length === 0) return;
    faultPoint(storeInsertPoint('objects'));
    await this.transport.insert({
      table: target,
      rows: pending.map((r) => JSON.stringify(r)).join('\n'),
      settings: this.insertSettings(
        target,
        pending.map((r) => ({ msg_id: r._msg_id })),
      ),
    });
  }

  identityGraph(account: string): {
    links: AsyncIterable<{ kind: string; value: string; svc_id: string; born: string }>;
    borns: AsyncIterable<{ svc_id: string; born: string }>;
    merges: AsyncIterable<{ loser: string; survivor: string; seq: number }>;
  } {
    return {
      links: this.rebuildRead(account, rebuild.identityLinks),
      borns: this.rebuildRead(account, rebuild.identityBorns),
      merges: this.rebuildRead(account, rebuild.identityMerges),
    };
  }

  currentProfiles(account: string): AsyncIterable<CurrentProfile> {
    return this.rebuildRead(account, rebuild.currentProfiles);
  }

  consentStates(
    account: string,
  ): AsyncIterable<{ svc_id: string; list_id: string; subscribed: boolean; version: number; at?: number }> {
    return this.rebuildRead(account, rebuild.consentStates);
  }

  identifierUpdates(
    account: string,
  ): AsyncIterable<{ field: string; value: string; version: number; change: string }> {
    return this.rebuildRead(account, rebuild.identifierUpdates);
  }

  orderChanges(account: string, since?: number): AsyncIterable<OrderChangeRow> {
    return this.rebuildRead(account, (read) => rebuild.orderChanges(read, since));
  }

  optOutPool(account: string): AsyncIterable<{ kind: string; value: string }> {
    return this.rebuildRead(account, rebuild.optOutPool);
  }

  /** A rebuild read of the account, run once it is iterated, without the unfinished messages' rows. */
  private async *rebuildRead<T>(
    account: string,
    read: (read: rebuild.RebuildRead) => AsyncIterable<T>,
  ): AsyncIterable<T> {
    const unfinished = await this.unfinishedMessages(account);
    const db = await this.readDatabase(account);
    yield* read({ transport: this.transport, db, unfinished, sliceRows: this.rebuildSliceRows });
  }

  async products(account: string, productIds: string[]): Promise<ProductRow[]> {
    if (productIds.length === 0) return [];
    const db = await this.readDatabase(account);
    // Every column: custom product fields have theirs beside the spec's, and an update keeps them too.
    const rows = await this.transport.query<Record<string, string | number | boolean | null>>(
      `SELECT * FROM ${db}.${PRODUCTS.name} FINAL WHERE product_id IN {ids:Array(String)}`,
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
        field_at: typeof row.field_at === 'string' ? row.field_at : '',
      };
    });
  }

  async ensureTables(account: string, tables: readonly TableDeclaration[]): Promise<void> {
    await this.ensureAccount(account);
    const db = databaseName(account);
    if (await this.upToDate(db, tables)) return;
    for (const table of tables)
      for (const statement of tableSql(db, table, this.layout)) await this.transport.exec(statement);
  }

  async execute(account: string, sql: string): Promise<void> {
    await this.ensureAccount(account);
    await this.transport.exec(sql.replaceAll('{db}', databaseName(account)));
  }

  async query<T>(account: string, sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    const db = await this.readDatabase(account);
    return this.transport.query<T>(sql.replaceAll('{db}', db), params);
  }

  async writeParquet(
    account: string,
    sql: string,
    params: Record<string, unknown>,
    path: string,
  ): Promise<void> {
    const db = await this.readDatabase(account);
    await this.transport.writeParquet(sql.replaceAll('{db}', db), params, path);
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

/** The survivors view's column: an account's database has it beside its tables (accountTables). */
const SURVIVORS_VIEW_COLUMN = 'customer_survivors.survivor';

/**
 * `table.column` of every column these tables declare (on a cluster, of the replicated tables and of the
 * Distributed ones over them).
 */
function declaredColumns(tables: readonly TableDeclaration[], layout: StoreLayout): string[] {
  const names = (table: string) => (layout.cluster ? [localTable(table, layout), table] : [table]);
  return tables.flatMap((table) =>
    names(table.name).flatMap((name) => storeColumns(table).map((c) => `${name}.${c.name}`)),
  );
}

/** Where a ClickHouseStore's tables live, and where it learns an account's events retention. */
export interface StoreOptions {
  layout?: StoreLayout;
  retention?: RetentionSource;
  /**
   * About how many rows one slice of a rebuild read holds (rebuild-reads.ts): the bound on what a
   * rebuild holds in the engine at once. Tests set it tiny to read in many slices.
   */
  rebuildSliceRows?: number;
}

/** An account's events retention in days, `null` to keep events forever (the default). */
export type RetentionSource = (account: string) => Promise<number | null>;

/** How often an open account's retention setting is read again (on its writes). */
export const RETENTION_CHECK_MS = 60_000;

/**
 * The database of empty tables never-written accounts read. Not starting with `cdp`: no account id can
 * name it, and a look for account databases (`LIKE 'cdp_%'`, where `_` is any character) does not find it.
 */
export const UNWRITTEN_DB = 'empty_cdp_account';

/** Columns of `products` that are not a product's field (the declared ones outside its field group). */
const PRODUCT_META_COLUMNS = new Set(
  storeColumns(PRODUCTS)
    .filter((c) => c.group === undefined)
    .map((c) => c.name),
);
