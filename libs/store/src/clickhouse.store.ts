import type { DriverHealth } from '@cdp/contracts';
import { toStoreTime } from '@cdp/domain';
import { FAULT_POINTS, faultPoint, storeInsertPoint } from '@cdp/faults';
import {
  AnalyticStore,
  type OrderChangeRow,
  type ProductRow,
  type StoreBatch,
} from './analytic-store.port.js';
import type { ClickHouseTransport } from './clickhouse-transport.js';
import { addColumnSql, objectTableSql, sqlName, type ColumnSpec } from './custom-columns.sql.js';
import { onceSettings, unstoredRows } from './dedup.js';
import * as rebuild from './rebuild-reads.js';
import { redactCustomers } from './redaction.js';
import { rowEncoder } from './row-encoding.js';
import {
  ACCOUNT_TABLES,
  COMMITS_TABLE,
  PRODUCTS,
  accountTables,
  databaseName,
} from './tables/account-tables.js';
import { storeColumns } from './tables/table.js';

/** The tables a batch writes, in write order (ACCOUNT_TABLES), each with its row encoder. */
const BATCH_TABLES = ACCOUNT_TABLES.flatMap((table) =>
  'batch' in table ? [{ table, key: table.batch as keyof StoreBatch, encode: rowEncoder(table) }] : [],
);

/**
 * The analytic store in ClickHouse SQL, over whichever transport the configuration chose. The tables
 * are declared in tables/account-tables.ts; how rows are encoded, written once, redacted and read back
 * for rebuilds lives in row-encoding.ts, dedup.ts, redaction.ts and rebuild-reads.ts.
 */
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
    for (const { table, key, encode } of BATCH_TABLES) {
      const target = `${db}.${table.name}`;
      let rows: readonly { msg_id: string }[] = batch[key] ?? [];
      if (redelivery) rows = await unstoredRows(this.transport, target, rows, (r) => r.msg_id);
      if (rows.length === 0) continue;
      const { body, columns } = encode(rows);
      faultPoint(storeInsertPoint(table.name));
      await this.transport.insert(target, body, onceSettings(target, rows), columns);
    }
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
    await this.transport.insert(
      table,
      ids.map((msg_id) => JSON.stringify({ msg_id, done, at })).join('\n'),
      onceSettings(
        `${table}:${done}`,
        ids.map((msg_id) => ({ msg_id })),
      ),
    );
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
    await redactCustomers(this.transport, databaseName(account), customerIds);
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
    const pending = redelivery
      ? await unstoredRows(this.transport, target, rows, (r) => r._msg_id, '_msg_id')
      : rows;
    if (pending.length === 0) return;
    faultPoint(storeInsertPoint('objects'));
    await this.transport.insert(
      target,
      pending.map((r) => JSON.stringify(r)).join('\n'),
      onceSettings(
        target,
        pending.map((r) => ({ msg_id: r._msg_id })),
      ),
    );
  }

  identityGraph(account: string): {
    links: AsyncIterable<{ kind: string; value: string; svc_id: string; born: string }>;
    merges: AsyncIterable<{ loser: string; survivor: string; seq: number }>;
  } {
    return {
      links: this.rebuildRead(account, rebuild.identityLinks),
      merges: this.rebuildRead(account, rebuild.identityMerges),
    };
  }

  currentProfiles(account: string): AsyncIterable<{
    svc_id: string;
    version: number;
    attributes: Record<string, string | boolean | number>;
    redacted?: boolean;
    times?: Record<string, number>;
  }> {
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

  orderChanges(account: string): AsyncIterable<OrderChangeRow> {
    return this.rebuildRead(account, rebuild.orderChanges);
  }

  optOutPool(account: string): AsyncIterable<{ kind: string; value: string }> {
    return this.rebuildRead(account, rebuild.optOutPool);
  }

  /** A rebuild read of the account, run once it is iterated, without the unfinished messages' rows. */
  private async *rebuildRead<T>(
    account: string,
    read: (transport: ClickHouseTransport, db: string, unfinished: readonly string[]) => AsyncIterable<T>,
  ): AsyncIterable<T> {
    const unfinished = await this.unfinishedMessages(account);
    yield* read(this.transport, databaseName(account), unfinished);
  }

  async products(account: string, productIds: string[]): Promise<ProductRow[]> {
    if (productIds.length === 0) return [];
    await this.ensureAccount(account);
    // Every column: custom product fields have theirs beside the spec's, and an update keeps them too.
    const rows = await this.transport.query<Record<string, string | number | boolean | null>>(
      `SELECT * FROM ${databaseName(account)}.${PRODUCTS.name} FINAL WHERE product_id IN {ids:Array(String)}`,
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

/** Columns of `products` that are not a product's field (the declared ones outside its field group). */
const PRODUCT_META_COLUMNS = new Set(
  storeColumns(PRODUCTS)
    .filter((c) => c.group === undefined)
    .map((c) => c.name),
);
