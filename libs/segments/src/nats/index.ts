import type { NatsConnection } from '@nats-io/transport-node';
import { askStoreOwner, StoreOwnerResponder, type StoreOwnerRequests } from '@cdp/store/nats';
import { SegmentEventCounts, type EventCountRequest } from '../event-counts.port.js';
import { SegmentSizes, type SegmentSizeRequest } from '../segment-sizes.port.js';
import type { EventTally } from '../segment.js';
import { RecentEvents, type RecentEvent, type RecentEventsRequest } from '../recent-events.port.js';

export function segmentCountsSubject(prefix: string): string {
  return `${prefix}.segments.counts`;
}

const requests = (prefix: string): StoreOwnerRequests => ({
  subject: segmentCountsSubject(prefix),
  queue: 'segment-counts',
  timeoutMs: 5_000,
  what: 'segment event counts',
});

/** Asks the process that owns the store (a processor with chDB) over NATS request/reply. */
export class NatsSegmentEventCounts extends SegmentEventCounts {
  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
  ) {
    super();
  }

  count(request: EventCountRequest): Promise<EventTally[]> {
    return askStoreOwner(this.nc, requests(this.prefix), request);
  }
}

/** Answers the API's count requests from the store this process owns (any processor of the queue group). */
export class SegmentCountsResponder extends StoreOwnerResponder<EventCountRequest, EventTally[]> {
  constructor(
    nc: NatsConnection,
    prefix: string,
    counts: SegmentEventCounts,
    onError: (err: unknown) => void,
  ) {
    super(nc, requests(prefix), (request) => counts.count(request), onError);
  }
}

const sizeRequests = (prefix: string): StoreOwnerRequests => ({
  subject: `${prefix}.segments.sizes`,
  queue: 'segment-sizes',
  // A size reads every customer of the account: longer than a lookup's counts.
  timeoutMs: 30_000,
  what: 'segment size',
});

/** Asks the store's owner how many customers a definition selects. */
export class NatsSegmentSizes extends SegmentSizes {
  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
  ) {
    super();
  }

  size(request: SegmentSizeRequest): Promise<number> {
    return askStoreOwner(this.nc, sizeRequests(this.prefix), request);
  }
}

/** Answers the API's size requests from the store this process owns. */
export class SegmentSizesResponder extends StoreOwnerResponder<SegmentSizeRequest, number> {
  constructor(nc: NatsConnection, prefix: string, sizes: SegmentSizes, onError: (err: unknown) => void) {
    super(nc, sizeRequests(prefix), (request) => sizes.size(request), onError);
  }
}

const recentRequests = (prefix: string): StoreOwnerRequests => ({
  subject: `${prefix}.segments.recent-events`,
  queue: 'recent-events',
  timeoutMs: 5_000,
  what: 'recent events',
});

/** Asks the store's owner for a customer's latest events. */
export class NatsRecentEvents extends RecentEvents {
  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
  ) {
    super();
  }

  recent(request: RecentEventsRequest): Promise<RecentEvent[]> {
    return askStoreOwner(this.nc, recentRequests(this.prefix), request);
  }
}

/** Answers the API's recent-events requests from the store this process owns. */
export class RecentEventsResponder extends StoreOwnerResponder<RecentEventsRequest, RecentEvent[]> {
  constructor(nc: NatsConnection, prefix: string, events: RecentEvents, onError: (err: unknown) => void) {
    super(nc, recentRequests(prefix), (request) => events.recent(request), onError);
  }
}
