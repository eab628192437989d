import type { Column, ColumnEntry, ExportType, FieldGroup } from './column.js';
import { exportTypeOf, fieldColumnType, fieldExportType } from './column.js';

/** How many of the last inserts' dedup tokens a table remembers, unless its declaration says otherwise. */
const DEDUP_WINDOW = 10_000;

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

/** The statements that create the table in database `db`, or bring an older one up to date. */
export function tableSql(db: string, table: TableDeclaration): string[] {
  const target = `${db}.${table.name}`;
  const columns = storeColumns(table);
  const lines = columns.filter((c) => !c.addedLater).map((c) => `  ${quotedName(c.name)} ${c.sql}`);
  if (table.msgIndex) lines.push('  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4');
  const key = table.orderBy.length === 1 ? table.orderBy[0]! : `(${table.orderBy.join(', ')})`;
  const later = columns
    .filter((c) => c.addedLater)
    .map((c) => `ALTER TABLE ${target} ADD COLUMN IF NOT EXISTS ${quotedName(c.name)} ${c.sql}`);
  // Domain fields added after an account's table was created get their column now (no-op otherwise),
  // in the place a new table has it: an older table ends up with the same columns in the same order.
  const after = (name: string): string => {
    const before = columns[columns.findIndex((c) => c.name === name) - 1];
    return before ? ` AFTER ${quotedName(before.name)}` : '';
  };
  const onOpen = Object.values(table.columns).flatMap((entry) =>
    entry.kind === 'fields' && entry.addOnOpen
      ? entry.names.map(
          (f) =>
            `ALTER TABLE ${target} ADD COLUMN IF NOT EXISTS ${quotedName(f)} ${fieldColumnType(entry.types[f]!)}${after(f)}`,
        )
      : [],
  );
  const window = table.dedupWindow === undefined ? DEDUP_WINDOW : table.dedupWindow;
  const settings = window === null ? '' : ` SETTINGS non_replicated_deduplication_window = ${window}`;
  return [
    `CREATE TABLE IF NOT EXISTS ${target} (\n${lines.join(',\n')}\n) ENGINE = ${table.engine} ORDER BY ${key}${settings}`,
    ...later,
    ...onOpen,
  ];
}
