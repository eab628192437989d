import type { ColumnType, Comparison, Filter } from '@cdp/exports';

type Value = string | number | boolean | null | undefined;

/**
 * A segment's customer filter evaluated on a profile's attributes, as the select compiler's SQL
 * compares the same filter in an export: a missing field is NULL (only `is` matches it), values are
 * compared in the field's type, `like` patterns have `%` as their only wildcard. `types` names each
 * field's column type (checked against the account's catalog when the segment was saved).
 */
export function matchesFilter(
  filter: Filter,
  attributes: Readonly<Record<string, unknown>>,
  types: ReadonlyMap<string, ColumnType>,
): boolean {
  return evaluate(filter, attributes, types) === true;
}

/**
 * SQL's three-valued logic: a comparison with NULL is unknown (`undefined`), never true, `!=` and `not
 * like` included; `not` of unknown stays unknown, `and`/`or` follow Kleene's tables. A customer matches
 * only where the filter is true, as a WHERE clause keeps only rows where it is true.
 */
function evaluate(
  filter: Filter,
  attributes: Readonly<Record<string, unknown>>,
  types: ReadonlyMap<string, ColumnType>,
): boolean | undefined {
  if ('and' in filter) return kleene(false, filter.and, attributes, types);
  if ('or' in filter) return kleene(true, filter.or, attributes, types);
  if ('not' in filter) {
    const v = evaluate(filter.not, attributes, types);
    return v === undefined ? undefined : !v;
  }
  return compare(filter, attributes[filter.field] as Value, types.get(filter.field) ?? 'string');
}

/**
 * Kleene's `and` (`decisive` false) and `or` (`decisive` true): one operand with the decisive value
 * decides; otherwise any unknown operand leaves the whole unknown.
 */
function kleene(
  decisive: boolean,
  operands: readonly Filter[],
  attributes: Readonly<Record<string, unknown>>,
  types: ReadonlyMap<string, ColumnType>,
): boolean | undefined {
  let unknown = false;
  for (const f of operands) {
    const v = evaluate(f, attributes, types);
    if (v === decisive) return decisive;
    if (v === undefined) unknown = true;
  }
  return unknown ? undefined : !decisive;
}

function compare(c: Comparison, raw: Value, type: ColumnType): boolean | undefined {
  const present = raw !== undefined && raw !== null && raw !== '';
  if (c.operator === 'is') return !present;
  if (c.operator === 'is not') return present;
  if (!present) return undefined;
  switch (c.operator) {
    case 'like':
    case 'not like':
    case 'ilike':
    case 'not ilike': {
      const insensitive = c.operator.includes('ilike');
      const re = likePattern(String(c.value), insensitive);
      const hit = re.test(String(raw));
      return c.operator.startsWith('not') ? !hit : hit;
    }
    default: {
      const order = ordered(raw, c.value, type);
      if (order === undefined) return undefined;
      switch (c.operator) {
        case '=':
          return order === 0;
        case '!=':
          return order !== 0;
        case '>':
          return order > 0;
        case '>=':
          return order >= 0;
        case '<':
          return order < 0;
        case '<=':
          return order <= 0;
      }
    }
  }
  return undefined;
}

/** -1, 0, 1 comparing the field's value with the filter's in the field's type; undefined: incomparable. */
function ordered(raw: Exclude<Value, null | undefined>, value: Value, type: ColumnType): number | undefined {
  if (value === null || value === undefined) return undefined;
  const sign = (d: number) => (Number.isNaN(d) ? undefined : Math.sign(d));
  switch (type) {
    case 'integer':
    case 'number':
    case 'decimal':
      return sign(Number(raw) - Number(value));
    case 'timestamp':
      return sign(timeOf(raw) - timeOf(value));
    case 'boolean':
      return sign(Number(truthy(raw)) - Number(truthy(value)));
    default: {
      const a = String(raw);
      const b = String(value);
      return a < b ? -1 : a > b ? 1 : 0;
    }
  }
}

function timeOf(v: string | number | boolean): number {
  return typeof v === 'number' ? (v < 1e11 ? v * 1000 : v) : Date.parse(String(v));
}

function truthy(v: string | number | boolean): boolean {
  return v === true || v === 1 || v === 'true' || v === '1';
}

/** Compiled LIKE patterns: a lookup evaluates every asked segment's filter, the same patterns each time. */
const likePatterns = new Map<string, RegExp>();
const MAX_LIKE_PATTERNS = 1_000;

function likePattern(pattern: string, insensitive: boolean): RegExp {
  const key = `${insensitive ? 'i' : 's'}${pattern}`;
  let re = likePatterns.get(key);
  if (!re) {
    if (likePatterns.size >= MAX_LIKE_PATTERNS) likePatterns.clear();
    re = compileLike(pattern, insensitive);
    likePatterns.set(key, re);
  }
  return re;
}

function compileLike(pattern: string, insensitive: boolean): RegExp {
  const body = pattern
    .split('%')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, insensitive ? 'is' : 's');
}
