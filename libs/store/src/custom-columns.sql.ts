import type { CustomFieldType } from '@cdp/domain';

/** A column the account's schema asks for: a custom field, or a field of an account's object. */
export interface ColumnSpec {
  name: string;
  type: CustomFieldType;
  /** Part of the object's primary key: never null, and the table's sort key. */
  primary?: boolean;
}

/** Schema names are lower snake case (spec naming rules); nothing else reaches SQL as a name. */
export function sqlName(name: string): string {
  if (!/^[a-z][a-z0-9_]{0,63}$/.test(name)) throw new Error(`not a schema name: ${name}`);
  return name;
}

/**
 * A custom number field's exact decimal: spec "Data types" allows 18 digits with at most 4 after the
 * point, so up to 18 before it — 22 digits, 4 of them after the point, hold all of them exactly.
 * Exports write the same type (Parquet DECIMAL).
 */
export const CUSTOM_DECIMAL = { precision: 22, scale: 4 } as const;

/** The store type of a schema type. */
export function storeType(type: CustomFieldType): string {
  switch (type) {
    case 'number':
      return `Decimal(${CUSTOM_DECIMAL.precision}, ${CUSTOM_DECIMAL.scale})`;
    case 'timestamp':
      return "DateTime64(3, 'UTC')";
    case 'boolean':
      return 'Bool';
    default:
      return 'String';
  }
}

/** A custom field's column in a built-in table: nullable, since rows before it have no value. */
export function addColumnSql(db: string, table: string, column: ColumnSpec): string {
  return `ALTER TABLE ${db}.${sqlName(table)} ADD COLUMN IF NOT EXISTS ${sqlName(column.name)} Nullable(${storeType(column.type)})`;
}

/**
 * The column of an account object's field. The table keeps one row per primary key and merges updates
 * field by field: `anyLast` skips nulls, so a record changes only the fields it carries (an upsert is
 * additive, like the v2 entities).
 */
function objectColumn(column: ColumnSpec): string {
  const type = storeType(column.type);
  return column.primary
    ? `${sqlName(column.name)} ${type}`
    : `${sqlName(column.name)} SimpleAggregateFunction(anyLast, Nullable(${type}))`;
}

/** Statements that make an account object's table hold every field it has now. */
export function objectTableSql(db: string, table: string, columns: readonly ColumnSpec[]): string[] {
  const keys = columns.filter((c) => c.primary);
  if (keys.length === 0) throw new Error(`object table ${table} needs a primary key`);
  const t = `${db}.${sqlName(table)}`;
  return [
    `CREATE TABLE IF NOT EXISTS ${t} (
  ${columns.map(objectColumn).join(',\n  ')},
  _msg_id SimpleAggregateFunction(anyLast, String),
  _updated_at SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
  INDEX msg_idx _msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = AggregatingMergeTree ORDER BY (${keys.map((k) => sqlName(k.name)).join(', ')})
SETTINGS non_replicated_deduplication_window = 10000`,
    ...columns
      .filter((c) => !c.primary)
      .map((c) => `ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS ${objectColumn(c)}`),
  ];
}
