import type { FieldType } from '@cdp/domain';

/**
 * How an exported column is written: the Parquet type, and how CSV spells the value. `decimal` is a
 * custom number field's exact decimal (CUSTOM_DECIMAL); `number` a built-in amount's double.
 */
export type ExportType = 'string' | 'number' | 'decimal' | 'integer' | 'boolean' | 'timestamp';

/**
 * One column of a store table: its ClickHouse type, and (as a phantom) the TypeScript type of its
 * value in a row, so row types are inferred from the declaration rather than written again.
 */
export interface Column<T = unknown, Optional extends boolean = false> {
  readonly kind: 'column';
  /** The ClickHouse type (with `DEFAULT …` for a column added later). */
  readonly sql: string;
  /** Kept when a compliance opt-out redacts the row (spec "Compliance opt-out"); cleared otherwise. */
  readonly kept: boolean;
  /**
   * For a column of JSON object text: the keys a redaction keeps (the others are removed); a column
   * with these is not `kept` whole.
   */
  readonly keptKeys?: readonly string[];
  /**
   * Added to existing tables by `ALTER TABLE … ADD COLUMN IF NOT EXISTS` after the CREATE: a column
   * newer than the table. Rows may lack it, so it is optional in the row type.
   */
  readonly addedLater: Optional;
  /** Never read: carries the value's TypeScript type. */
  readonly __value?: T;
}

/**
 * The domain's typed fields (customer attributes, event data, order and product fields) as one column
 * each, held in a row as one map under the group's property (`attributes`, `data`, `fields`).
 */
export interface FieldGroup<V = unknown> {
  readonly kind: 'fields';
  /** The fields, in column order. */
  readonly names: readonly string[];
  readonly types: Readonly<Record<string, FieldType>>;
  /** Fields kept by a redaction (every other field, custom ones too, is cleared). */
  readonly kept: readonly string[];
  /** Fields the domain adds later get their column on every open (ALTER … ADD COLUMN IF NOT EXISTS). */
  readonly addOnOpen: boolean;
  readonly __value?: V;
}

export type ColumnEntry = Column<unknown, boolean> | FieldGroup;

function column<T>(sql: string): Column<T> {
  return { kind: 'column', sql, kept: false, addedLater: false };
}

/** A domain field's column: nullable, since a row need not carry the field. */
export function fieldColumnType(type: FieldType): string {
  switch (type) {
    case 'integer':
      return 'Nullable(Int64)';
    case 'number':
      return 'Nullable(Float64)';
    case 'boolean':
      return 'Nullable(Bool)';
    default:
      return 'Nullable(String)';
  }
}

/** The export type of a domain field (a timestamp field stays a timestamp, whatever it is stored as). */
export function fieldExportType(type: FieldType): ExportType {
  switch (type) {
    case 'integer':
      return 'integer';
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'timestamp':
      return 'timestamp';
    default:
      return 'string';
  }
}

/** The export type of a ClickHouse type; maps and arrays export as their JSON text. */
export function exportTypeOf(sql: string): ExportType {
  const inner = sql.replace(/^Nullable\((.*)\)$/, '$1');
  if (inner.startsWith('DateTime')) return 'timestamp';
  if (/^U?Int\d+$/.test(inner)) return 'integer';
  if (inner.startsWith('Decimal')) return 'decimal';
  if (/^Float\d+$/.test(inner)) return 'number';
  if (inner === 'Bool') return 'boolean';
  return 'string';
}

/** Column builders, named after their ClickHouse types. */
export const ch = {
  string: <T extends string = string>() => column<T>('String'),
  lowCardinality: <T extends string = string>() => column<T>('LowCardinality(String)'),
  uint8: () => column<number>('UInt8'),
  uint32: () => column<number>('UInt32'),
  uint64: () => column<number>('UInt64'),
  int64: () => column<number>('Int64'),
  float64: () => column<number>('Float64'),
  bool: () => column<boolean>('Bool'),
  /** Times are written as `YYYY-MM-DD hh:mm:ss.sss` (toStoreTime). */
  dateTime: () => column<string>("DateTime64(3, 'UTC')"),
  /** To the second (the hour of a sale). */
  dateTimeSeconds: () => column<string>("DateTime('UTC')"),
  stringArray: () => column<string[]>('Array(String)'),
  float64Array: () => column<number[]>('Array(Float64)'),
  stringMap: () => column<Record<string, string>>('Map(String, String)'),
  nullable: <T>(c: Column<T>): Column<T | null> => column<T | null>(`Nullable(${c.sql})`),
  /** Kept by a redaction: bookkeeping, not personal data. */
  kept: <T, O extends boolean>(c: Column<T, O>): Column<T, O> => ({ ...c, kept: true }),
  /** JSON object text of which a redaction keeps only the keys named (the rest is personal or unknown). */
  keptKeys: <T, O extends boolean>(c: Column<T, O>, keys: readonly string[]): Column<T, O> => ({
    ...c,
    keptKeys: keys,
  }),
  /** A column added after the table existed, with the value older rows read. */
  addedLater: <T>(c: Column<T>, defaultSql: string): Column<T, true> => ({
    ...c,
    sql: `${c.sql} DEFAULT ${defaultSql}`,
    addedLater: true,
  }),
  /** The domain's fields `names` (typed by `types`), one nullable column each. */
  fields: <V>(
    types: Readonly<Record<string, FieldType>>,
    options: { names?: readonly string[]; kept?: readonly string[]; addOnOpen?: boolean } = {},
  ): FieldGroup<V> => ({
    kind: 'fields',
    names: options.names ?? Object.keys(types),
    types,
    kept: options.kept ?? [],
    addOnOpen: options.addOnOpen ?? false,
  }),
};
