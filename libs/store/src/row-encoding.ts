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
 * Rows as JSON arrays in declared column order, then the batch's custom fields (spec "Custom objects and
 * fields": fields of the group that are not declared columns), which follow the built-in columns. A
 * declared field that no row of the batch has is left out of the insert's columns: its column is
 * Nullable with no default, so the engine stores NULL as the row would have said, and neither the
 * encoder nor the engine's parser goes through a `null` per row for it (an event has a few of the
 * 24 event fields).
 */
function compactEncoder(
  columns: ReturnType<typeof storeColumns>,
  groupProperty: string | undefined,
): (rows: readonly object[]) => EncodedRows {
  const fixed = columns.filter((c) => c.group === undefined).map((c) => c.name);
  const declared = columns.filter((c) => c.group !== undefined).map((c) => c.name);
  const isDeclared = new Set(declared);
  return (rows) => {
    const present = new Set<string>();
    if (groupProperty)
      for (const row of rows) {
        const fields = (row as Record<string, Record<string, unknown> | undefined>)[groupProperty];
        for (const name in fields) if (fields[name] !== null && fields[name] !== undefined) present.add(name);
      }
    const inGroup = [
      ...declared.filter((name) => present.has(name)),
      ...[...present].filter((name) => !isDeclared.has(name)),
    ];
    // One array of the row's values, filled again for every row: a new one per row was a large share
    // of the processor's garbage (an event is one row, with ~20 values).
    const values: unknown[] = new Array<unknown>(fixed.length + inGroup.length).fill(null);
    const lines: string[] = new Array<string>(rows.length);
    for (let n = 0; n < rows.length; n++) {
      const r = rows[n] as Record<string, unknown>;
      const fields = (groupProperty ? r[groupProperty] : undefined) as Record<string, unknown> | undefined;
      let at = 0;
      for (const name of fixed) values[at++] = r[name];
      for (const name of inGroup) values[at++] = fields?.[name] ?? null;
      lines[n] = JSON.stringify(values);
    }
    const body = lines.join('\n');
    return { body, columns: [...fixed, ...inGroup] };
  };
}
