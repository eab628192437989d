import type { TableDeclaration } from './tables/table.js';
import { storeColumns } from './tables/table.js';

/** One insert's body, and the columns it names when it names them (compact rows). */
export interface EncodedRows {
  body: string;
  columns?: string[];
}

/**
 * How a table's rows become the lines of a JSONEachRow (or JSONCompactEachRow) insert, planned once
 * per table from its declaration.
 */
export function rowEncoder(table: TableDeclaration): (rows: readonly object[]) => EncodedRows {
  const columns = storeColumns(table).filter((c) => !c.addedLater);
  const group = Object.entries(table.columns).find(([, entry]) => entry.kind === 'fields');
  if (table.compact) return compactEncoder(columns, group?.[0]);
  if (!group) return (rows) => ({ body: rows.map((r) => JSON.stringify(r)).join('\n') });
  const property = group[0];
  return (rows) => ({
    body: rows
      .map((r) => {
        const { [property]: fields, ...rest } = r as Record<string, unknown>;
        return joinJson(rest, fields ?? {});
      })
      .join('\n'),
  });
}

/**
 * One JSONEachRow line. The nested field map (profile attributes, event data) becomes top-level
 * columns by joining the two serialisations: spreading them into a new object per row cost more
 * than the insert itself.
 */
function joinJson(head: object, tail: object): string {
  const a = JSON.stringify(head);
  const b = JSON.stringify(tail);
  return b.length === 2 ? a : `${a.slice(0, -1)},${b.slice(1)}`;
}

/**
 * Rows as JSON arrays in declared column order, then the batch's custom fields (spec "Custom objects
 * and fields": fields of the group that are not declared columns), which follow the built-in columns.
 */
function compactEncoder(
  columns: ReturnType<typeof storeColumns>,
  groupProperty: string | undefined,
): (rows: readonly object[]) => EncodedRows {
  const names = columns.map((c) => c.name);
  const declared = new Set(columns.filter((c) => c.group).map((c) => c.name));
  const plan = columns.map((c) => ({ name: c.name, inGroup: c.group !== undefined }));
  return (rows) => {
    const custom = new Set<string>();
    if (groupProperty)
      for (const row of rows) {
        const fields = (row as Record<string, Record<string, unknown>>)[groupProperty] ?? {};
        for (const name in fields) if (!declared.has(name)) custom.add(name);
      }
    const extra = [...custom];
    const body = rows
      .map((row) => {
        const r = row as Record<string, unknown>;
        const fields = (groupProperty ? r[groupProperty] : undefined) as Record<string, unknown> | undefined;
        const values: unknown[] = [];
        for (const c of plan) values.push(c.inGroup ? (fields?.[c.name] ?? null) : r[c.name]);
        for (const name of extra) values.push(fields?.[name] ?? null);
        return JSON.stringify(values);
      })
      .join('\n');
    return { body, columns: [...names, ...extra] };
  };
}
