import type { ColumnType } from '@cdp/exports';
import { conditionHolds, countBounds } from './segment.js';
import { matchesFilter } from './customer-filter.js';

const TYPES = new Map<string, ColumnType>([
  ['email', 'string'],
  ['first_name', 'string'],
  ['score', 'decimal'],
  ['vip', 'boolean'],
  ['signed_up', 'timestamp'],
]);
const ADA = {
  email: 'ada@example.com',
  first_name: 'Ada',
  score: '12.5',
  vip: true,
  signed_up: '2024-03-01T00:00:00Z',
};
const is = (filter: Parameters<typeof matchesFilter>[0], attrs: Record<string, unknown> = ADA) =>
  matchesFilter(filter, attrs, TYPES);

describe('a segment customer filter on a profile (the export compiler semantics)', () => {
  it('compares in the field type', () => {
    expect(is({ field: 'score', operator: '>', value: 9 })).toBe(true); // 12.5 > 9, not '12.5' < '9'
    expect(is({ field: 'score', operator: '=', value: 12.5 })).toBe(true);
    expect(is({ field: 'vip', operator: '=', value: true })).toBe(true);
    expect(is({ field: 'signed_up', operator: '<', value: '2024-03-02' })).toBe(true);
    expect(is({ field: 'first_name', operator: '>=', value: 'Ad' })).toBe(true);
  });

  it('treats a missing field as NULL: only `is` matches it, `!=` and `not like` do not', () => {
    expect(is({ field: 'first_name', operator: 'is', value: null }, {})).toBe(true);
    expect(is({ field: 'first_name', operator: 'is not', value: null })).toBe(true);
    expect(is({ field: 'first_name', operator: '!=', value: 'Bob' }, {})).toBe(false);
    expect(is({ field: 'first_name', operator: 'not like', value: 'B%' }, {})).toBe(false);
  });

  it('has `%` as the only like wildcard, ilike ignoring case', () => {
    expect(is({ field: 'email', operator: 'like', value: '%@example.com' })).toBe(true);
    expect(is({ field: 'email', operator: 'like', value: 'a_a%' })).toBe(false); // `_` is itself
    expect(is({ field: 'email', operator: 'ilike', value: 'ADA%' })).toBe(true);
    expect(is({ field: 'email', operator: 'not ilike', value: 'ADA%' })).toBe(false);
  });

  it('negates with not in three-valued logic: not of a comparison with NULL stays unknown', () => {
    expect(is({ not: { field: 'first_name', operator: '=', value: 'Bob' } })).toBe(true);
    expect(is({ not: { field: 'first_name', operator: '=', value: 'Bob' } }, {})).toBe(false);
    expect(is({ not: { field: 'first_name', operator: 'is', value: null } }, {})).toBe(false);
    // unknown OR true is true; unknown AND false is false; not(unknown AND true) is unknown.
    const unknownOr = {
      or: [
        { field: 'vip', operator: '=' as const, value: true },
        { field: 'x', operator: '=' as const, value: 1 },
      ],
    };
    expect(is({ not: unknownOr })).toBe(false);
    expect(
      is({
        not: {
          and: [
            { field: 'x', operator: '=', value: 1 },
            { field: 'vip', operator: '=', value: false },
          ],
        },
      }),
    ).toBe(true);
    expect(
      is({
        not: {
          and: [
            { field: 'x', operator: '=', value: 1 },
            { field: 'vip', operator: '=', value: true },
          ],
        },
      }),
    ).toBe(false);
  });

  it('nests and/or', () => {
    const vipOrBob = {
      or: [
        { field: 'vip', operator: '=' as const, value: true },
        { field: 'first_name', operator: '=' as const, value: 'Bob' },
      ],
    };
    expect(is({ and: [vipOrBob, { field: 'score', operator: '<', value: 20 }] })).toBe(true);
    expect(is({ and: [vipOrBob, { field: 'score', operator: '<', value: 10 }] })).toBe(false);
  });

  it("follows Kleene's tables for and/or over every mix of true, false and unknown operands", () => {
    // Unknown sorts between false and true: `and` is the least of its operands, `or` the greatest.
    const RANK = { false: 0, unknown: 1, true: 2 } as const;
    type Truth = keyof typeof RANK;
    const operand: Record<Truth, Parameters<typeof is>[0]> = {
      true: { field: 'vip', operator: '=', value: true },
      false: { field: 'vip', operator: '=', value: false },
      unknown: { field: 'first_name', operator: '=', value: 'Bob' },
    };
    const attrs = { vip: true }; // first_name missing: NULL
    // A filter is unknown when neither it nor its negation holds.
    const truth = (filter: Parameters<typeof is>[0]): Truth =>
      is(filter, attrs) ? 'true' : is({ not: filter }, attrs) ? 'false' : 'unknown';
    const truths = Object.keys(RANK) as Truth[];
    const mixes = truths.flatMap((a) => truths.flatMap((b) => truths.map((c) => [a, b, c])));
    for (const mix of [...truths.map((t) => [t]), ...mixes]) {
      const ranks = mix.map((t) => RANK[t]);
      const byRank = (r: number) => truths.find((t) => RANK[t] === r);
      expect([mix, truth({ and: mix.map((t) => operand[t]) })]).toEqual([mix, byRank(Math.min(...ranks))]);
      expect([mix, truth({ or: mix.map((t) => operand[t]) })]).toEqual([mix, byRank(Math.max(...ranks))]);
    }
  });
});

describe('event condition bounds', () => {
  it('reads none as at least once, max_count alone as at most', () => {
    expect(countBounds({ type: 't', within_days: 1 })).toEqual({ min: 1, max: Infinity });
    expect(countBounds({ type: 't', within_days: 1, max_count: 0 })).toEqual({ min: 0, max: 0 });
    expect(countBounds({ type: 't', within_days: 1, min_count: 2, max_count: 5 })).toEqual({
      min: 2,
      max: 5,
    });
  });

  it('bounds order totals: a total bound alone lets the count be anything, none at all', () => {
    const atMost = { type: 'order', within_days: 30, max_total: 50 };
    expect(countBounds(atMost)).toEqual({ min: 0, max: Infinity });
    expect(conditionHolds(atMost, { count: 0, total: 0 })).toBe(true);
    expect(conditionHolds(atMost, { count: 3, total: 50.0001 })).toBe(false);
    const atLeast = { type: 'order', within_days: 30, min_total: 100 };
    expect(conditionHolds(atLeast, { count: 2, total: 100 })).toBe(true);
    expect(conditionHolds(atLeast, { count: 0, total: 0 })).toBe(false);
    expect(conditionHolds({ ...atLeast, min_count: 3 }, { count: 2, total: 500 })).toBe(false);
  });
});
