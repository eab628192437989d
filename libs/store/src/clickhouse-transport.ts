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
  /**
   * Runs a select and writes its result as one Parquet file at a local `path` (which must not exist),
   * streamed to disk so the rows never sit in this process's memory (exports stage data this way).
   */
  writeParquet(sql: string, params: Record<string, unknown>, path: string): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Rows per Parquet row group when a select is written to a file: the engine holds one group in memory
 * before writing it, so this bounds its memory whatever the size of the result.
 */
export const PARQUET_ROW_GROUP = 100_000;

/** The same as SQL, with LZ4: staged files are read back once, so cheap compression beats small. */
export const PARQUET_SETTINGS = `output_format_parquet_row_group_size = ${PARQUET_ROW_GROUP}, output_format_parquet_compression_method = 'lz4'`;

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

/**
 * Any failure of an engine call as a StoreError carrying the engine's code: chDB gives it as
 * `clickhouseCode`, the HTTP client as `code`, and old servers only in the text (`Code: 60, …`).
 */
export function toStoreError(err: unknown): StoreError {
  if (err instanceof StoreError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const e = err as { clickhouseCode?: number; code?: string | number };
  const code = Number(
    e.clickhouseCode ?? (/^\d+$/.test(String(e.code ?? '')) ? e.code : /Code: (\d+)/.exec(message)?.[1]),
  );
  return new StoreError(message, Number.isFinite(code) ? code : undefined, { cause: err });
}

/** Runs an engine call, turning its failure into a StoreError. */
export async function storeCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw toStoreError(err);
  }
}
