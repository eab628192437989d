import type { CustomFieldType } from '@cdp/domain';
import {
  SINGLE_NODE,
  addColumnStatements,
  engineSql,
  localTable,
  onCluster,
  clusterName,
  type StoreLayout,
} from './tables/table.js';

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

/**
 * A custom field's column in a built-in table: nullable, since rows before it have no value. On a
 * cluster, added on every node to the replicated table and to the Distributed one over it.
 */
export function addColumnSql(
  db: string,
  table: string,
  column: ColumnSpec,
  layout: StoreLayout = SINGLE_NODE,
): string[] {
  return addColumnStatements(
    db,
    sqlName(table),
    `${sqlName(column.name)} Nullable(${storeType(column.type)})`,
    layout,
  );
}

/**
 * The column of an account object's field. The table keeps one row per primary key and merges updates
 * field by field: `anyLast` skips nulls, so a record changes only the fields it carries (an upsert is
 * additive, like the v2 entities). That column is last-inserted-wins (processing order); every field also
 * has its value in acceptance order (`objectFieldAtColumn`), which is what reads take.
 */
function objectColumn(column: ColumnSpec): string {
  const type = storeType(column.type);
  return column.primary
    ? `${sqlName(column.name)} ${type}`
    : `${sqlName(column.name)} SimpleAggregateFunction(anyLast, Nullable(${type}))`;
}

/**
 * Name of the column holding a field's value with the acceptance order (`at`) of the record that wrote it:
 * a `(at, value)` tuple merged by `max`, so the row keeps the value of the record accepted last whatever
 * order processors insert in. A record that does not carry the field leaves it `(0, NULL)`, which any
 * write beats. Names of the schema cannot start with `_`: no field can clash with it.
 */
export function objectFieldAtColumn(name: string): string {
  return `_at_${sqlName(name)}`;
}

function objectAtColumn(column: ColumnSpec): string {
  return `${objectFieldAtColumn(column.name)} SimpleAggregateFunction(max, Tuple(UInt64, Nullable(${storeType(column.type)})))`;
}

/**
 * The current rows of an account object's table, each field as acceptance order leaves it: the value of
 * its `(at, value)` column, or for a field no record wrote since that column exists (rows stored before
 * it), the plain column's.
 */
export function currentObjectRowsSql(db: string, table: string, fields: readonly ColumnSpec[]): string {
  const replaced = fields
    .filter((f) => !f.primary)
    .map(
      (f) =>
        `ifNull(tupleElement(${objectFieldAtColumn(f.name)}, 2), ${sqlName(f.name)}) AS ${sqlName(f.name)}`,
    );
  const star = replaced.length ? `* REPLACE (${replaced.join(', ')})` : '*';
  return `SELECT ${star} FROM ${db}.${sqlName(table)} FINAL`;
}

/** Statements that make an account object's table hold every field it has now. */
export function objectTableSql(
  db: string,
  table: string,
  columns: readonly ColumnSpec[],
  layout: StoreLayout = SINGLE_NODE,
): string[] {
  const keys = columns.filter((c) => c.primary);
  if (keys.length === 0) throw new Error(`object table ${table} needs a primary key`);
  const name = sqlName(table);
  const physical = localTable(name, layout);
  const keyList = keys.map((k) => sqlName(k.name)).join(', ');
  const window = layout.cluster ? 'replicated_deduplication_window' : 'non_replicated_deduplication_window';
  return [
    `CREATE TABLE IF NOT EXISTS ${db}.${physical}${onCluster(layout)} (
  ${[...columns.map(objectColumn), ...columns.filter((c) => !c.primary).map(objectAtColumn)].join(',\n  ')},
  _msg_id SimpleAggregateFunction(anyLast, String),
  _updated_at SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
  INDEX msg_idx _msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = ${engineSql('AggregatingMergeTree', layout)} ORDER BY (${keyList})
SETTINGS ${window} = 10000`,
    // A record's versions merge only on one shard: the primary key picks it.
    ...(layout.cluster
      ? [
          `CREATE TABLE IF NOT EXISTS ${db}.${name}${onCluster(layout)} AS ${db}.${physical} ENGINE = Distributed(${clusterName(layout.cluster)}, ${db}, ${physical}, cityHash64(${keyList}))`,
        ]
      : []),
    ...columns
      .filter((c) => !c.primary)
      .flatMap((c) => [
        ...addColumnStatements(db, name, objectColumn(c), layout),
        ...addColumnStatements(db, name, objectAtColumn(c), layout),
      ]),
  ];
}
