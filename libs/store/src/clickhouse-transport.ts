/**
 * One insert: JSONEachRow text (objects), or with `columns`, JSONCompactEachRow text (one array per row,
 * in the order of the columns); `settings` apply to this insert alone.
 */
export interface InsertBlock {
  table: string;
  rows: string;
  settings?: Record<string, string | number>;
  columns?: readonly string[];
}

/**
 * How ClickHouse SQL reaches an engine: in-process (chDB) or over HTTP (a ClickHouse server).
 * Everything above this interface is shared, so both run exactly the same SQL.
 */
export interface ClickHouseTransport {
  readonly name: string;
  /** Runs a statement that returns nothing (DDL). */
  exec(sql: string): Promise<void>;
  /** Inserts rows as one block. */
  insert(block: InsertBlock): Promise<void>;
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

/**
 * Engine error codes that a retry cannot cure: the rows themselves are wrong for their columns (a
 * value the engine cannot parse, convert or fit), so the same insert fails the same way every time and
 * its message is dead-lettered at once. Everything else — connection refused, timeouts, memory limit,
 * too many parts, a missing column another step is adding — is transient and retried. Names are
 * ClickHouse's `errorCodeToName`. SYNTAX_ERROR is left out on purpose: it would be our SQL, for every message.
 */
export const DETERMINISTIC_STORE_CODES: ReadonlyMap<number, string> = new Map([
  [6, 'CANNOT_PARSE_TEXT'],
  [25, 'CANNOT_PARSE_ESCAPE_SEQUENCE'],
  [26, 'CANNOT_PARSE_QUOTED_STRING'],
  [27, 'CANNOT_PARSE_INPUT_ASSERTION_FAILED'],
  [38, 'CANNOT_PARSE_DATE'],
  [41, 'CANNOT_PARSE_DATETIME'],
  [53, 'TYPE_MISMATCH'],
  [69, 'ARGUMENT_OUT_OF_BOUND'],
  [70, 'CANNOT_CONVERT_TYPE'],
  [72, 'CANNOT_PARSE_NUMBER'],
  [117, 'INCORRECT_DATA'],
  [130, 'CANNOT_READ_ARRAY_FROM_TEXT'],
  [131, 'TOO_LARGE_STRING_SIZE'],
  [190, 'SIZES_OF_ARRAYS_DONT_MATCH'],
  [321, 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'],
  [349, 'CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN'],
  [376, 'CANNOT_PARSE_UUID'],
  [377, 'ILLEGAL_SYNTAX_FOR_DATA_TYPE'],
  [407, 'DECIMAL_OVERFLOW'],
  [691, 'UNKNOWN_ELEMENT_OF_ENUM'],
]);

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

  /** The same rows will fail the same way on every attempt (the bus dead-letters them at once). */
  get deterministic(): boolean {
    return this.code !== undefined && DETERMINISTIC_STORE_CODES.has(this.code);
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
