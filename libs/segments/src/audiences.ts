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
  /** The profile, or its read under way (the counts are asked for meanwhile). */
  attributes: Readonly<Record<string, unknown>> | PromiseLike<Readonly<Record<string, unknown>>>;
}

/**
 * Whether a customer belongs to each segment, computed when asked: the customer filter on the hot
 * profile, the event conditions counted in the store or its digests (one request for every condition
 * of every segment asked). Nothing is precomputed, so the passage of time, merges and restarts need no
 * bookkeeping (docs/architecture.md "Audiences").
 *
 * The counts are asked for while the profile is still being read, not after its filters ruled segments
 * out: a lookup waits for the slower of the two reads instead of their sum (each is a round trip on the
 * scaled-out wiring), at the price of counting conditions of segments whose filter then fails.
 */
export async function evaluateAudiences(
  customer: AudienceCustomer,
  segments: readonly Segment[],
  types: ReadonlyMap<string, ColumnType>,
  counts: SegmentEventCounts,
  now: number,
): Promise<Map<string, AudienceState>> {
  const conditions: EventCondition[] = segments.flatMap((s) => s.definition.events ?? []);
  const [attributes, counted] = await Promise.all([
    customer.attributes,
    conditions.length
      ? counts.count({ account: customer.account, customers: customer.ids, conditions, now })
      : [],
  ]);
  const out = new Map<string, AudienceState>();
  let i = 0;
  for (const s of segments) {
    const filter = s.definition.customer;
    let qualified = !filter || matchesFilter(filter, attributes, types);
    for (const c of s.definition.events ?? []) {
      if (!conditionHolds(c, counted[i++] ?? { count: 0, total: 0 })) qualified = false;
    }
    out.set(s.id, qualified ? 'qualified' : 'not_qualified');
  }
  return out;
}
