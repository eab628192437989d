/**
 * How ClickHouse SQL reaches an engine: in-process (chDB) or over HTTP (a ClickHouse server).
 * Everything above this interface is shared, so both run exactly the same SQL.
 */
export interface ClickHouseTransport {
  readonly name: string;
  /** Runs a statement that returns nothing (DDL). */
  exec(sql: string): Promise<void>;
  /**
   * Inserts rows as one block, with per-insert settings: JSONEachRow text (objects), or with `columns`,
   * JSONCompactEachRow text (one array per row, in the order of the columns).
   */
  insert(
    table: string,
    rows: string,
    settings?: Record<string, string | number>,
    columns?: readonly string[],
  ): Promise<void>;
  /** Runs a select with `{name:Type}` parameters bound by the engine, returning all rows. */
  query<T>(sql: string, params?: Record<string, unknown>): Promise<T[]>;
  /** Runs a select and yields its rows as they come, without holding the whole result. */
  stream<T>(sql: string, params?: Record<string, unknown>): AsyncIterable<T>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A store failure with the engine's code, so callers can tell bad SQL from a passing fault. */
export class StoreError extends Error {
  override name = 'StoreError';
  constructor(
    message: string,
    readonly code: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
