import type { EventRow } from '@cdp/store';
import type { EventCondition, EventTally } from './segment.js';

/** One count request: the customer's ids (the survivor and every customer merged into it) and the conditions. */
export interface EventCountRequest {
  account: string;
  customers: string[];
  conditions: EventCondition[];
  /** Milliseconds since the epoch: the windows end here. */
  now: number;
}

/** What of a stored event row the counts read. */
export type StoredEvent = Pick<EventRow, 'event_id' | 'svc_id' | 'ts' | 'type' | 'action' | 'order'>;

/**
 * What each condition reads of the customer's events: how many, and their orders' total. Answered where the analytic store is: in
 * this process when it holds the store, or by the store's owner (the processor with chDB) over NATS.
 */
export abstract class SegmentEventCounts {
  abstract count(request: EventCountRequest): Promise<EventTally[]>;

  /**
   * The store writer's notice that these events' write committed (the processor's StepWriter), for
   * counts that keep what they read: nothing to do for the others.
   */
  stored(_account: string, _events: readonly StoredEvent[]): void {}

  /** The store writer's notice that a write failed and may have stored part of its events. */
  uncertain(_account: string): void {}
}
