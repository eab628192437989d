import type { Metrics } from '@cdp/metrics';
import type { ClickHouseTransport, InsertBlock } from './clickhouse-transport.js';

/**
 * A transport that counts what goes through it: rows and latency of every insert, by table
 * (the part after the account's database, so the label stays low-cardinality). Everything else passes
 * straight through. The cost is one scan of the row text for newlines per insert.
 */
export class MeteredTransport implements ClickHouseTransport {
  constructor(
    private readonly inner: ClickHouseTransport,
    private readonly metrics: Metrics,
  ) {}

  get name(): string {
    return this.inner.name;
  }

  async insert(block: InsertBlock): Promise<void> {
    const { table, rows } = block;
    const labels = { table: table.slice(table.lastIndexOf('.') + 1) };
    const stop = this.metrics.storeInsertDuration.startTimer(labels);
    try {
      await this.inner.insert(block);
    } catch (err) {
      stop({ outcome: 'error' });
      throw err;
    }
    stop({ outcome: 'ok' });
    this.metrics.storeInsertRows.inc(labels, countRows(rows));
  }

  exec(sql: string): Promise<void> {
    return this.inner.exec(sql);
  }

  query<T>(sql: string, params?: Record<string, unknown>): Promise<T[]> {
    return this.inner.query<T>(sql, params);
  }

  stream<T>(sql: string, params?: Record<string, unknown>): AsyncIterable<T> {
    return this.inner.stream<T>(sql, params);
  }

  writeParquet(sql: string, params: Record<string, unknown>, path: string): Promise<void> {
    return this.inner.writeParquet(sql, params, path);
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Rows of JSONEachRow / JSONCompactEachRow text: one a line (JSON escapes newlines inside values). */
export function countRows(rows: string): number {
  if (rows.length === 0) return 0;
  let n = 1;
  for (let i = rows.indexOf('\n'); i !== -1; i = rows.indexOf('\n', i + 1)) n++;
  return rows.endsWith('\n') ? n - 1 : n;
}
