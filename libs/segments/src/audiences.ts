import type { ColumnType } from '@cdp/exports';
import { matchesFilter } from './customer-filter.js';
import type { SegmentEventCounts } from './event-counts.port.js';
import { conditionHolds, type EventCondition, type Segment } from './segment.js';

export type AudienceState = 'qualified' | 'not_qualified';

/** What the evaluation reads of one customer: its ids (survivor first) and its current profile. */
export interface AudienceCustomer {
  account: string;
  /** The survivor and every customer merged into it: their events are the survivor's history. */
  ids: string[];
  attributes: Readonly<Record<string, unknown>>;
}

/**
 * Whether a customer belongs to each segment, computed when asked: the customer filter on the hot
 * profile, the event conditions counted in the store (one query for every condition of every segment
 * asked). Nothing is precomputed, so the passage of time, merges and restarts need no bookkeeping
 * (docs/architecture.md "Audiences").
 */
export async function evaluateAudiences(
  customer: AudienceCustomer,
  segments: readonly Segment[],
  types: ReadonlyMap<string, ColumnType>,
  counts: SegmentEventCounts,
  now: number,
): Promise<Map<string, AudienceState>> {
  const out = new Map<string, AudienceState>();
  const pending: Segment[] = [];
  for (const s of segments) {
    const filter = s.definition.customer;
    if (filter && !matchesFilter(filter, customer.attributes, types)) out.set(s.id, 'not_qualified');
    else pending.push(s);
  }
  const conditions: EventCondition[] = pending.flatMap((s) => s.definition.events ?? []);
  const counted = conditions.length
    ? await counts.count({ account: customer.account, customers: customer.ids, conditions, now })
    : [];
  let i = 0;
  for (const s of pending) {
    let qualified = true;
    for (const c of s.definition.events ?? []) {
      if (!conditionHolds(c, counted[i++] ?? { count: 0, total: 0 })) qualified = false;
    }
    out.set(s.id, qualified ? 'qualified' : 'not_qualified');
  }
  return out;
}
