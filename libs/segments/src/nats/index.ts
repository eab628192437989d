import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { EngineUnavailableError } from '@cdp/contracts';
import { SegmentEventCounts, type EventCountRequest } from '../event-counts.port.js';

/** How long the API waits for the store's owner before answering 503. */
const REQUEST_TIMEOUT_MS = 5_000;

export function segmentCountsSubject(prefix: string): string {
  return `${prefix}.segments.counts`;
}

type Reply = { counts: number[] } | { error: string };

/** Asks the process that owns the store (a processor with chDB) over NATS request/reply. */
export class NatsSegmentEventCounts extends SegmentEventCounts {
  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
  ) {
    super();
  }

  async count(request: EventCountRequest): Promise<number[]> {
    let reply: Reply;
    try {
      const msg = await this.nc.request(segmentCountsSubject(this.prefix), JSON.stringify(request), {
        timeout: REQUEST_TIMEOUT_MS,
      });
      reply = msg.json<Reply>();
    } catch (err) {
      throw new EngineUnavailableError('store', `no answer from the store's owner (${String(err)})`);
    }
    if ('error' in reply) throw new Error(`segment event counts failed: ${reply.error}`);
    return reply.counts;
  }
}

/** Answers the API's count requests from the store this process owns (any processor of the queue group). */
export class SegmentCountsResponder {
  private readonly subscription: Subscription;

  constructor(
    nc: NatsConnection,
    prefix: string,
    counts: SegmentEventCounts,
    onError: (err: unknown) => void,
  ) {
    this.subscription = nc.subscribe(segmentCountsSubject(prefix), {
      queue: 'segment-counts',
      callback: (err, msg) => {
        if (err) return onError(err);
        void (async () => {
          let reply: Reply;
          try {
            reply = { counts: await counts.count(msg.json<EventCountRequest>()) };
          } catch (e) {
            onError(e);
            reply = { error: e instanceof Error ? e.message : String(e) };
          }
          msg.respond(JSON.stringify(reply));
        })();
      },
    });
  }

  async close(): Promise<void> {
    await this.subscription.drain();
  }
}
