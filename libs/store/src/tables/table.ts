import type { Column, ColumnEntry, ExportType, FieldGroup } from './column.js';
import { exportTypeOf, fieldColumnType, fieldExportType } from './column.js';

/** How many of the last inserts' dedup tokens a table remembers, unless its declaration says otherwise. */
const DEDUP_WINDOW = 10_000;

/**
 * The merge selector's base of append-only tables (the engine's default is 5). A higher base lets more
 * parts of a similar size gather and merges them in one go, so a row is rewritten fewer times on its
 * way into a large part: under `bench:ingest` the engine's merge threads took about half the CPU an
 * event (docs/benchmarks.md), for a few dozen more parts a partition between merges. Tables whose
 * merges collapse rows (Replacing, Summing) keep the default: their reads pay for every part not yet
 * merged.
 */
const APPEND_ONLY_MERGE_SELECTOR_BASE = 20;

/** Names ClickHouse reads as keywords are quoted wherever the store writes them. */
const RESERVED = new Set(['order']);

export function quotedName(name: string): string {
  return RESERVED.has(name) ? `\`${name}\`` : name;
}

/** An exported column the table does not hold: the customer a record belongs to now. */
export interface SurvivorColumn {
  name: string;
  /** The table's customer column it is computed from (through the account's merges). */
  survivorOf: string;
}

/**
 * One table of an account's database: the one place its DDL, its row type, its place in a store batch,
 * its export columns and what a redaction keeps are written down. Adding a table is adding one of these
 * to ACCOUNT_TABLES.
 */
export interface TableDeclaration<
  C extends Record<string, ColumnEntry> = Record<string, ColumnEntry>,
  N extends string = string,
  B extends string = string,
> {
  readonly name: N;
  /** In column order; a field group stands for its fields' columns at its place. */
  readonly columns: C;
  /**
   * `MergeTree`; `ReplacingMergeTree(<version column>)`: the highest version replaces the rest;
   * `SummingMergeTree`: rows of one key add up.
   */
  readonly engine: 'MergeTree' | 'SummingMergeTree' | `ReplacingMergeTree(${string & keyof C})`;
  /**
   * How many recent inserts' dedup tokens the engine remembers, so re-sending an insert after a crash
   * stores nothing twice (default 10000); `null` for a table that does not deduplicate inserts.
   */
  readonly dedupWindow?: number | null;
  readonly orderBy: readonly (string & keyof C)[];
  /**
   * The month of this time column partitions the table (`PARTITION BY toYYYYMM(…)`): reads bounded in
   * time skip whole months, and retention drops old rows month by month. Only append-only tables have
   * one: a Replacing table's versions of one key must share a partition to replace each other.
   */
  readonly partitionBy?: string & keyof C;
  /** The account's events retention (days) counts from this column: older rows are removed by TTL. */
  readonly retainedBy?: string & keyof C;
  /**
   * With a cluster, the columns whose hash picks a row's shard: the customer, where the table has one,
   * so a customer's rows (and the exports' joins over them) stay on one shard; otherwise the key that
   * must stay together (an order's versions, a product's, an identifier's changes). Every account table
   * has one; a table without one cannot be created on a cluster.
   */
  readonly shardBy?: readonly (string & keyof C)[];
  /** A bloom-filter index on msg_id: the stored-message check of a redelivery reads it. */
  readonly msgIndex: boolean;
  /** The StoreBatch property whose rows this table takes; tables without one are written elsewhere. */
  readonly batch?: B;
  /** Rows go as JSON arrays with an explicit column list: cheaper for the bulk of every batch. */
  readonly compact?: boolean;
  /**
   * Rows about a customer (spec "Compliance opt-out"): `by` names the customer; a redaction clears
   * every column of that customer's rows that is not kept (custom columns too) and sets `mark`. A
   * table without it holds no personal data, or keeps it for the reason its comment gives.
   */
  readonly redaction?: {
    readonly by: string & keyof C;
    readonly mark?: string & keyof C;
    /**
     * Rows that do not name the customer but belong to a row of `table` that does, through the column
     * of the same name in both (an order's changes sent without a customer).
     */
    readonly via?: { readonly column: string & keyof C; readonly table: string };
  };
  /** What an export of the table shows, in order; a field group stands for its fields. */
  readonly export?: {
    readonly columns: readonly ((string & keyof C) | SurvivorColumn)[];
    /** Rows left out of exports (a condition on the current rows). */
    readonly where?: string;
  };
}

/** Keeps the declaration's literal types, so rows are inferred from it. */
export function defineTable<
  const C extends Record<string, ColumnEntry>,
  const N extends string,
  const B extends string = never,
>(declaration: TableDeclaration<C, N, B>): TableDeclaration<C, N, B> {
  return declaration;
}

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type ValueOf<E> =
  E extends Column<infer T, boolean> ? T : E extends FieldGroup<infer V> ? Record<string, V> : never;
type OptionalKeys<C> = { [K in keyof C]: C[K] extends Column<unknown, true> ? K : never }[keyof C];

/** The row type a table's declaration gives: a property per column, a map per field group. */
export type RowOf<D> =
  D extends TableDeclaration<infer C, string, string>
    ? Simplify<
        { -readonly [K in Exclude<keyof C, OptionalKeys<C>>]: ValueOf<C[K]> } & {
          -readonly [K in OptionalKeys<C>]?: ValueOf<C[K]>;
        }
      >
    : never;

/** The StoreBatch property of a table's rows (never for tables a batch does not write). */
export type BatchKeyOf<D> =
  D extends TableDeclaration<Record<string, ColumnEntry>, string, infer B> ? B : never;

/** A column as the store sees it, field groups spread out. */
export interface StoreColumn {
  name: string;
  /** The ClickHouse type. */
  sql: string;
  /** The field group holding its value in a row, if it is a domain field. */
  group?: string;
  kept: boolean;
  /** JSON object text of which a redaction keeps these keys only. */
  keptKeys?: readonly string[];
  addedLater: boolean;
  exportType: ExportType;
}

/** Every column of the table in order, field groups spread out. */
export function storeColumns(table: TableDeclaration): StoreColumn[] {
  return Object.entries(table.columns).flatMap(([name, entry]): StoreColumn[] =>
    entry.kind === 'column'
      ? [
          {
            name,
            sql: entry.sql,
            kept: entry.kept,
            ...(entry.keptKeys ? { keptKeys: entry.keptKeys } : {}),
            addedLater: entry.addedLater,
            exportType: exportTypeOf(entry.sql),
          },
        ]
      : entry.names.map((field) => ({
          name: field,
          sql: fieldColumnType(entry.types[field]!),
          group: name,
          kept: entry.kept.includes(field),
          addedLater: false,
          exportType: fieldExportType(entry.types[field]!),
        })),
  );
}

/** Column names a table declares (field groups spread out). */
export function declaredColumnNames(table: TableDeclaration): string[] {
  return storeColumns(table).map((c) => c.name);
}

/** What a redaction keeps of the table's rows; every other column (custom ones too) is cleared. */
export function keptOnRedaction(table: TableDeclaration): Set<string> {
  return new Set(
    storeColumns(table)
      .filter((c) => c.kept)
      .map((c) => c.name),
  );
}

/**
 * Where an account's tables live: one server (`cluster` unset), or a ClickHouse cluster, where each
 * table is a Replicated table on every node (`<name>_local`) under a Distributed table of the declared
 * name that every read and insert goes through (see docs/architecture.md "A ClickHouse cluster").
 */
export interface StoreLayout {
  readonly cluster?: string;
}

export const SINGLE_NODE: StoreLayout = {};

/** Names ClickHouse accepts unquoted in `ON CLUSTER`: the configuration is checked against this. */
export function clusterName(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(name)) throw new Error(`not a cluster name: ${name}`);
  return name;
}

/** ` ON CLUSTER <name>` with a cluster, nothing without. */
export function onCluster(layout: StoreLayout): string {
  return layout.cluster ? ` ON CLUSTER ${clusterName(layout.cluster)}` : '';
}

/** The table a row physically lives in: the declared name on one node, `<name>_local` on a cluster. */
export function localTable(name: string, layout: StoreLayout): string {
  return layout.cluster ? `${name}_local` : name;
}

/**
 * What an `ALTER` changing rows (a mutation: UPDATE, DELETE, MODIFY TTL) names: on a cluster the
 * replicated tables on every shard, since a Distributed table holds no rows to change.
 */
export function mutationTarget(db: string, name: string, layout: StoreLayout): string {
  return `${db}.${localTable(name, layout)}${onCluster(layout)}`;
}

/**
 * Statements that add a column to a table; on a cluster to the replicated tables and to the
 * Distributed table over them (which has its own column list).
 */
export function addColumnStatements(
  db: string,
  name: string,
  columnSql: string,
  layout: StoreLayout,
): string[] {
  const add = (table: string) =>
    `ALTER TABLE ${db}.${table}${onCluster(layout)} ADD COLUMN IF NOT EXISTS ${columnSql}`;
  return layout.cluster ? [add(localTable(name, layout)), add(name)] : [add(name)];
}

/**
 * The engine clause: on a cluster the Replicated form of the declared engine, its replica path keyed by
 * shard, database and table (the usual macros every node's config defines), its other arguments after.
 */
export function engineSql(engine: string, layout: StoreLayout): string {
  if (!layout.cluster) return engine;
  const [, family = engine, args] = /^(\w+?)(?:\((.*)\))?$/.exec(engine) ?? [];
  const replica = ["'/clickhouse/tables/{shard}/{database}/{table}'", "'{replica}'", ...(args ? [args] : [])];
  return `Replicated${family}(${replica.join(', ')})`;
}

/**
 * A table's deduplication window setting: a replicated table remembers its last inserts' tokens in
 * Keeper (`replicated_deduplication_window`), a single node's in the table (`non_replicated_…`).
 */
function dedupSetting(window: number, layout: StoreLayout): string {
  return layout.cluster
    ? `replicated_deduplication_window = ${window}`
    : `non_replicated_deduplication_window = ${window}`;
}

/** The TTL expression of a retention of `days` on the table's retention column. */
export function retentionTtl(table: TableDeclaration, days: number): string {
  if (!table.retainedBy) throw new Error(`${table.name} has no retention column`);
  if (!Number.isInteger(days) || days < 1) throw new Error(`not a retention in days: ${days}`);
  return `toDateTime(${table.retainedBy}) + INTERVAL ${days} DAY`;
}

/**
 * The statements that create the table in database `db`, or bring an older one up to date. A table
 * created before partitions existed keeps its (unpartitioned) key: ClickHouse cannot re-partition a
 * table in place, and `CREATE … IF NOT EXISTS` leaves it as it is (docs/operations.md "Partitions").
 */
export function tableSql(db: string, table: TableDeclaration, layout: StoreLayout = SINGLE_NODE): string[] {
  const physical = localTable(table.name, layout);
  const columns = storeColumns(table);
  const lines = columns.filter((c) => !c.addedLater).map((c) => `  ${quotedName(c.name)} ${c.sql}`);
  if (table.msgIndex) lines.push('  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4');
  const key = table.orderBy.length === 1 ? table.orderBy[0]! : `(${table.orderBy.join(', ')})`;
  const later = columns
    .filter((c) => c.addedLater)
    .flatMap((c) => addColumnStatements(db, table.name, `${quotedName(c.name)} ${c.sql}`, layout));
  // Domain fields added after an account's table was created get their column now (no-op otherwise),
  // in the place a new table has it: an older table ends up with the same columns in the same order.
  const after = (name: string): string => {
    const before = columns[columns.findIndex((c) => c.name === name) - 1];
    return before ? ` AFTER ${quotedName(before.name)}` : '';
  };
  const onOpen = Object.values(table.columns).flatMap((entry) =>
    entry.kind === 'fields' && entry.addOnOpen
      ? entry.names.flatMap((f) =>
          addColumnStatements(
            db,
            table.name,
            `${quotedName(f)} ${fieldColumnType(entry.types[f]!)}${after(f)}`,
            layout,
          ),
        )
      : [],
  );
  const window = table.dedupWindow === undefined ? DEDUP_WINDOW : table.dedupWindow;
  const settingList = [...(window === null ? [] : [dedupSetting(window, layout)]), ...mergeSettings(table)];
  const settings = settingList.length ? ` SETTINGS ${settingList.join(', ')}` : '';
  // A table created before a merge setting existed gets it now (its parts are merged by it from then on).
  const modify = mergeSettings(table).map(
    (setting) => `ALTER TABLE ${db}.${physical}${onCluster(layout)} MODIFY SETTING ${setting}`,
  );
  const partition = table.partitionBy ? ` PARTITION BY toYYYYMM(${table.partitionBy})` : '';
  const create = `CREATE TABLE IF NOT EXISTS ${db}.${physical}${onCluster(layout)} (\n${lines.join(',\n')}\n) ENGINE = ${engineSql(table.engine, layout)}${partition} ORDER BY ${key}${settings}`;
  if (layout.cluster && !table.shardBy) throw new Error(`${table.name} declares no shard key`);
  const distributed = layout.cluster
    ? [
        `CREATE TABLE IF NOT EXISTS ${db}.${table.name}${onCluster(layout)} AS ${db}.${physical} ENGINE = Distributed(${clusterName(layout.cluster)}, ${db}, ${physical}, cityHash64(${table.shardBy!.join(', ')}))`,
      ]
    : [];
  return [create, ...distributed, ...later, ...onOpen, ...modify];
}

/**
 * The merge settings a table is declared with, as `name = value`: a new table is created with them, an
 * older one gets them when it is brought up to date (ClickHouseStore checks them in `system.tables`).
 */
export function mergeSettings(table: TableDeclaration): string[] {
  return table.engine === 'MergeTree' ? [`merge_selector_base = ${APPEND_ONLY_MERGE_SELECTOR_BASE}`] : [];
}
