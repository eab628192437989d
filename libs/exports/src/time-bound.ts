import type { ExportObject } from './export-objects.js';
import type { Comparison, Filter } from './export-request.js';
import { timestampMs } from './select.compiler.js';

/**
 * How far a store-side bound is widened past the filter's own: the bound only has to skip months the
 * filter cannot match (the table is partitioned by month); DuckDB applies the filter itself to the rows
 * read, exactly, so a day's margin costs nothing and leaves no edge (precision, zones) to get wrong.
 */
const MARGIN_MS = 86_400_000;

/** The time range a select's filter confines its base object's rows to (ms; open ends undefined). */
export interface TimeRange {
  from?: number;
  to?: number;
}

/**
 * The range of the object's time column (`timeColumn`, its table's partition column) that the filter
 * requires of every row it keeps: its comparisons of that column with a timestamp, anded at the top
 * (within `and`s, not under an `or`, which any of its branches may satisfy, nor a `not`). Undefined when the filter
 * does not bound it: the export reads the whole table, as a full export must.
 */
export function filterTimeRange(filter: Filter | undefined, object: ExportObject): TimeRange | undefined {
  const column = object.timeColumn;
  if (!filter || !column) return undefined;
  const range: TimeRange = {};
  const narrow = (c: Comparison) => {
    if (c.field !== column) return;
    const ms = timestampMs(c.value);
    if (ms === undefined) return;
    if (c.operator === '>' || c.operator === '>=' || c.operator === '=')
      range.from = Math.max(range.from ?? -Infinity, ms);
    if (c.operator === '<' || c.operator === '<=' || c.operator === '=')
      range.to = Math.min(range.to ?? Infinity, ms);
  };
  const visit = (f: Filter) => {
    // An `or` or a `not` does not confine every row kept to its comparisons: only anded ones count.
    if ('and' in f) f.and.forEach(visit);
    else if (!('or' in f) && !('not' in f)) narrow(f);
  };
  visit(filter);
  return range.from === undefined && range.to === undefined ? undefined : range;
}

/**
 * The range as a ClickHouse condition on the time column, a day wider each side, with its parameters:
 * the store then reads only the months the range touches (partition pruning).
 */
export function storeTimeBound(
  range: TimeRange,
  column: string,
): { sql: string; params: Record<string, number> } {
  const parts: string[] = [];
  const params: Record<string, number> = {};
  if (range.from !== undefined) {
    parts.push(`${column} >= fromUnixTimestamp64Milli({t_from:Int64}, 'UTC')`);
    params.t_from = Math.floor(range.from - MARGIN_MS);
  }
  if (range.to !== undefined) {
    parts.push(`${column} <= fromUnixTimestamp64Milli({t_to:Int64}, 'UTC')`);
    params.t_to = Math.ceil(range.to + MARGIN_MS);
  }
  return { sql: parts.join(' AND '), params };
}
