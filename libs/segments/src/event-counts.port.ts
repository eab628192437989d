import type { EventCondition, EventTally } from './segment.js';

/** One count request: the customer's ids (the survivor and every customer merged into it) and the conditions. */
export interface EventCountRequest {
  account: string;
  customers: string[];
  conditions: EventCondition[];
  /** Milliseconds since the epoch: the windows end here. */
  now: number;
}

/**
 * What each condition reads of the customer's events: how many, and their orders' total. Answered where the analytic store is: in
 * this process when it holds the store, or by the store's owner (the processor with chDB) over NATS.
 */
export abstract class SegmentEventCounts {
  abstract count(request: EventCountRequest): Promise<EventTally[]>;
}
