import { ApiError } from '@cdp/contracts';
import { EVENTS_OBJECT, type ExportCatalog, type ExportObject } from './export-objects.js';
import type { Filter } from './export-request.js';
import { compileFilter, storeDialect } from './select.compiler.js';

/**
 * The customer's events of `type` (and `action`, when given) in the last `within_days` days: the
 * condition holds when their count is within [min_count, max_count] and the sum of their orders'
 * `total` within [min_total, max_total]. No count bound means "at least once" (min_count 1), unless a
 * total bound is given (then the total alone decides: `max_total: 50` holds for a customer with no
 * order); max_count alone means "at most that many" (0: never).
 */
export interface EventCondition {
  type: string;
  action?: string;
  within_days: number;
  min_count?: number;
  max_count?: number;
  min_total?: number;
  max_total?: number;
}

/** What a condition reads of one customer's matching events. */
export interface EventTally {
  count: number;
  /** The sum of the events' order `total` (0 for events without one). */
  total: number;
}

/**
 * Who a segment selects: customers passing the customer filter (the exports API's grammar, over
 * customer fields) and every event condition.
 */
export interface MemberDefinition {
  customer?: Filter;
  events?: EventCondition[];
}

export const DAY_MS = 86_400_000;

/** The bounds a condition's count must fall within. */
export function countBounds(c: EventCondition): { min: number; max: number } {
  const byTotal = c.min_total !== undefined || c.max_total !== undefined;
  const min = c.min_count ?? (c.max_count === undefined && !byTotal ? 1 : 0);
  return { min, max: c.max_count ?? Number.POSITIVE_INFINITY };
}

/** Whether a customer's tally of a condition's events satisfies it. */
export function conditionHolds(c: EventCondition, tally: EventTally): boolean {
  const { min, max } = countBounds(c);
  return (
    tally.count >= min &&
    tally.count <= max &&
    (c.min_total === undefined || tally.total >= c.min_total) &&
    (c.max_total === undefined || tally.total <= c.max_total)
  );
}

/**
 * The sum of the events' order totals, exactly (the `total` of each event's order as sent, 4 decimals;
 * an event without one adds 0).
 */
export const ORDER_TOTAL_SUM = "sum(toDecimal128OrZero(JSONExtractRaw(ifNull(`order`, ''), 'total'), 4))";

export interface MembersQuery {
  /** ClickHouse SQL selecting the members' `svc_id`, `{db}` the account's database. */
  sql: string;
  params: Record<string, unknown>;
}

/**
 * A member definition as one selection of the account's current customers (merged ones excluded) in
 * the store's SQL: the customer filter compiled by the export's own filter compiler, and each event
 * condition as the customers whose tally of matching events (theirs and those of every customer merged
 * into them) falls within its bounds. A condition that admits no event selects by exclusion, so a
 * customer without any event passes it (GLOBAL: on a cluster each set is built once, not per shard).
 * `now` ends the windows; an event stamped ahead of it counts.
 */
export function compileMembers(
  definition: MemberDefinition,
  catalog: ExportCatalog,
  now: number,
  prefix = 'm',
): MembersQuery {
  const customers = catalog.object('customers');
  if (!customers) throw ApiError.notFound('unable to locate object customers');
  const params: Record<string, unknown> = {};
  const where: string[] = [];
  if (definition.customer) {
    const resolve = (path: string) => {
      const field = customers.columns.find((c) => c.name === path);
      if (!field) throw ApiError.notFound(`unable to locate field customers.${path}`);
      return { sql: storeColumn(field), type: field.type };
    };
    where.push(compileFilter(definition.customer, resolve, storeDialect(params, `${prefix}f`)));
  }
  (definition.events ?? []).forEach((c, i) => {
    const condition = eventCondition(c, now, params, `${prefix}e${i}_`);
    if (condition) where.push(condition);
  });
  return {
    sql:
      `SELECT t0.svc_id AS svc_id FROM ${customers.from} AS t0` +
      (where.length ? ` WHERE ${where.join(' AND ')}` : ''),
    params,
  };
}

function storeColumn(column: ExportObject['columns'][number]): string {
  return `t0.${column.expr ?? `\`${column.name}\``}`;
}

/** Where an event's history belongs now: its customer's survivor (the export's own expression). */
const SURVIVOR = EVENTS_OBJECT.columns.find((c) => c.name === 'customer_svc_id')!.expr!;

function eventCondition(
  c: EventCondition,
  now: number,
  params: Record<string, unknown>,
  prefix: string,
): string | undefined {
  const { min, max } = countBounds(c);
  params[`${prefix}type`] = c.type;
  params[`${prefix}from`] = now - c.within_days * DAY_MS;
  let matching = `type = {${prefix}type:String} AND ts > fromUnixTimestamp64Milli({${prefix}from:Int64})`;
  if (c.action !== undefined) {
    params[`${prefix}action`] = c.action;
    matching += ` AND action = {${prefix}action:String}`;
  }
  const counted = (having: string) =>
    `(SELECT ${SURVIVOR} AS id FROM {db}.events WHERE ${matching} GROUP BY id HAVING ${having})`;
  const holds: string[] = [];
  if (min > 0) {
    params[`${prefix}min`] = min;
    holds.push(`count() >= {${prefix}min:Float64}`);
  }
  if (Number.isFinite(max)) {
    params[`${prefix}max`] = max;
    holds.push(`count() <= {${prefix}max:Float64}`);
  }
  const total = (bound: number | undefined, name: string, op: string) => {
    if (bound === undefined) return;
    params[`${prefix}${name}`] = String(bound);
    holds.push(`${ORDER_TOTAL_SUM} ${op} toDecimal128({${prefix}${name}:String}, 4)`);
  };
  total(c.min_total, 'min_total', '>=');
  total(c.max_total, 'max_total', '<=');
  if (holds.length === 0) return undefined;
  // A customer with no matching event has the tally {count 0, total 0}: where that passes, customers are
  // selected by excluding those whose events fail the condition.
  return conditionHolds(c, { count: 0, total: 0 })
    ? `t0.svc_id GLOBAL NOT IN ${counted(`NOT (${holds.join(' AND ')})`)}`
    : `t0.svc_id GLOBAL IN ${counted(holds.join(' AND '))}`;
}
