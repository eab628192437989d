import type { ClickHouseTransport } from './clickhouse-transport.js';
import { sqlName } from './custom-columns.sql.js';
import { ACCOUNT_TABLES, type StoreBatch } from './tables/account-tables.js';
import {
  localTable,
  mutationTarget,
  quotedName,
  SINGLE_NODE,
  storeColumns,
  type StoreColumn,
  type StoreLayout,
  type TableDeclaration,
} from './tables/table.js';

/**
 * Compliance opt-out (spec "Compliance opt-out"): what a redaction does to a table's rows is written
 * once, in the declarations (`redaction`, kept columns, kept JSON keys). This applies it to stored rows
 * (set-based, one statement per table) and to rows about to be stored, the same way.
 */

/** A table a redaction reaches, planned from its declaration. */
interface RedactedTable {
  table: TableDeclaration;
  /** The column naming the customer a row is about. */
  by: string;
  mark?: string;
  /** Rows about the customer through a row of another redacted table (TableDeclaration.redaction). */
  via?: { column: string; of: RedactedTable };
  /** Declared columns by name; a stored column not among them is a custom one, cleared. */
  declared: Map<string, StoreColumn>;
}

const REDACTED_TABLES: readonly RedactedTable[] = (() => {
  const plans = new Map<string, RedactedTable>();
  for (const table of ACCOUNT_TABLES as readonly TableDeclaration[]) {
    if (!table.redaction) continue;
    const declared = new Map(storeColumns(table).map((c) => [c.name, c]));
    for (const key of table.orderBy)
      // A mutation cannot rewrite a sorting key column: what identifies a row there must be kept.
      if (!declared.get(key)?.kept) throw new Error(`${table.name}.${key} is a sorting key: declare it kept`);
    plans.set(table.name, { table, by: table.redaction.by, mark: table.redaction.mark, declared });
  }
  for (const plan of plans.values()) {
    const via = plan.table.redaction!.via;
    const of = via && plans.get(via.table);
    if (via && !of) throw new Error(`${plan.table.name} is redacted via ${via.table}, which is not redacted`);
    if (via && of) plan.via = { column: via.column, of };
  }
  return [...plans.values()];
})();

/**
 * Removes the personal data of these customers, and of the customers merged into them, from every row
 * of database `db` that is about them: one mutation per table for the whole set. On a cluster the
 * mutation names the replicated tables on every shard (a Distributed table holds no rows to change).
 */
export async function redactCustomers(
  transport: ClickHouseTransport,
  db: string,
  customerIds: readonly string[],
  layout: StoreLayout = SINGLE_NODE,
): Promise<void> {
  if (customerIds.length === 0) return;
  const merged = await transport.query<{ svc_id: string }>(
    `SELECT svc_id FROM ${db}.customer_survivors WHERE survivor IN {ids:Array(String)}`,
    { ids: [...customerIds] },
  );
  const ids = [...new Set([...customerIds, ...merged.map((m) => m.svc_id)])].map(sqlString).join(', ');
  for (const plan of REDACTED_TABLES) {
    const target = mutationTarget(db, plan.table.name, layout);
    const stored = await transport.query<{ name: string; type: string }>(
      `DESCRIBE TABLE ${db}.${localTable(plan.table.name, layout)}`,
    );
    const cleared = stored.flatMap(({ name, type }) => {
      const declared = plan.declared.get(name);
      if (declared?.kept || name === plan.mark) return [];
      const column = quotedName(sqlName(name));
      const value = declared?.keptKeys
        ? keptKeysSql(column, declared.keptKeys, type.startsWith('Nullable('))
        : `defaultValueOfTypeName(${sqlString(type)})`;
      return [`${column} = ${value}`];
    });
    if (plan.mark) cleared.push(`${plan.mark} = true`);
    if (cleared.length === 0) continue;
    const via = plan.via
      ? ` OR ${plan.via.column} IN (SELECT ${plan.via.column} FROM ${db}.${plan.via.of.table.name}
           WHERE ${plan.via.of.by} IN (${ids}))`
      : '';
    // A mutation rewrites the parts holding these rows; mutations_sync waits for it, so once this
    // returns no row (FINAL or not) holds their personal data. Re-running it (a redelivery) changes
    // nothing more, so a crash between two tables is finished by the redelivered opt-out.
    await transport.exec(
      `ALTER TABLE ${target} UPDATE ${cleared.join(', ')}
         WHERE ${plan.by} IN (${ids})${via} SETTINGS ${mutationSettings(layout)}`,
    );
  }
}

/**
 * A mutation waits until every part is rewritten (mutations_sync = 2). A Replicated table refuses a
 * mutation with a subquery (it could differ between replicas) unless allowed: the redaction's and the
 * commit log's subqueries read rows already stored, the same on every replica, so it is allowed there.
 */
export function mutationSettings(layout: StoreLayout): string {
  return layout.cluster ? 'mutations_sync = 2, allow_nondeterministic_mutations = 1' : 'mutations_sync = 2';
}

/**
 * The batch with the rows about the customers it redacts (a snapshot marked `redacted`, customers
 * merged into one in the batch, and `alsoRedacted`, redacted before) cleared as `redactCustomers`
 * clears stored rows: a record accepted before an opt-out and processed after it is stored without
 * the person's data.
 */
export function withoutPersonalData(batch: StoreBatch, alsoRedacted: readonly string[] = []): StoreBatch {
  const redacted = new Set(batch.customers.filter((c) => c.redacted).map((c) => c.svc_id));
  for (const c of alsoRedacted) redacted.add(c);
  if (redacted.size === 0) return batch;
  // Losers merged into a redacted customer in this batch (in any order of the merge rows).
  let before: number;
  do {
    before = redacted.size;
    for (const m of batch.merges) if (redacted.has(m.survivor)) redacted.add(m.loser);
  } while (redacted.size > before);
  const rowsOf = (plan: RedactedTable): Record<string, unknown>[] =>
    ((plan.table.batch && (batch as Record<string, unknown>)[plan.table.batch]) ?? []) as Record<
      string,
      unknown
    >[];
  const isAbout = (plan: RedactedTable): ((row: Record<string, unknown>) => boolean) => {
    const via = plan.via;
    if (!via) return (row) => redacted.has(row[plan.by] as string);
    const owned = new Set(
      rowsOf(via.of)
        .filter(isAbout(via.of))
        .map((r) => r[via.column]),
    );
    return (row) => redacted.has(row[plan.by] as string) || owned.has(row[via.column]);
  };
  const out: Record<string, unknown> = { ...batch };
  for (const plan of REDACTED_TABLES) {
    const rows = rowsOf(plan);
    if (rows.length === 0) continue;
    const about = isAbout(plan);
    out[plan.table.batch!] = rows.map((row) => (about(row) ? redactedRow(plan, row) : row));
  }
  return out as StoreBatch;
}

/** One row as a redaction leaves it. */
function redactedRow(plan: RedactedTable, row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(plan.table.columns)) {
    const value = row[name];
    if (entry.kind === 'fields') {
      // Only the kept fields stay in the group's map; custom fields are not among them.
      const fields = (value ?? {}) as Record<string, unknown>;
      out[name] = Object.fromEntries(entry.kept.filter((f) => f in fields).map((f) => [f, fields[f]]));
    } else if (entry.kept) {
      if (name in row) out[name] = value;
    } else if (entry.keptKeys) {
      out[name] = typeof value === 'string' ? keptKeysOf(value, entry.keptKeys) : value;
    } else {
      out[name] = clearedValue(entry.sql);
    }
  }
  if (plan.mark) out[plan.mark] = true;
  return out;
}

/** What a cleared column holds: the type's default, as `defaultValueOfTypeName` gives it in SQL. */
function clearedValue(sql: string): unknown {
  if (sql.startsWith('Nullable(')) return null;
  if (sql.startsWith('Map(')) return {};
  if (sql.startsWith('Array(')) return [];
  if (sql === 'String' || sql === 'LowCardinality(String)') return '';
  throw new Error(`a redaction cannot clear a ${sql} column: declare it kept`);
}

/** JSON object text with only the keys named. */
function keptKeysOf(json: string, keys: readonly string[]): string {
  const object = JSON.parse(json) as Record<string, unknown>;
  return JSON.stringify(Object.fromEntries(Object.entries(object).filter(([k]) => keys.includes(k))));
}

/** The SQL of `keptKeysOf`: the object's members re-joined without the others. */
function keptKeysSql(column: string, keys: readonly string[], nullable: boolean): string {
  const members = `arrayFilter(kv -> tupleElement(kv, 1) IN (${keys.map(sqlString).join(', ')}),
    JSONExtractKeysAndValuesRaw(assumeNotNull(${column})))`;
  const text = `concat('{', arrayStringConcat(arrayMap(kv -> concat(toJSONString(tupleElement(kv, 1)), ':',
    tupleElement(kv, 2)), ${members}), ','), '}')`;
  return nullable ? `if(${column} IS NULL, NULL, ${text})` : text;
}

/** A string literal of ClickHouse SQL. */
export function sqlString(value: string): string {
  return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}
