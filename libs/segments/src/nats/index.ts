import type { NatsConnection } from '@nats-io/transport-node';
import { askStoreOwner, StoreOwnerResponder, type StoreOwnerRequests } from '@cdp/store/nats';
import { SegmentEventCounts, type EventCountRequest } from '../event-counts.port.js';

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

  count(request: EventCountRequest): Promise<number[]> {
    return askStoreOwner(this.nc, requests(this.prefix), request);
  }
}

/** Answers the API's count requests from the store this process owns (any processor of the queue group). */
export class SegmentCountsResponder extends StoreOwnerResponder<EventCountRequest, number[]> {
  constructor(
    nc: NatsConnection,
    prefix: string,
    counts: SegmentEventCounts,
    onError: (err: unknown) => void,
  ) {
    super(nc, requests(prefix), (request) => counts.count(request), onError);
  }
}
