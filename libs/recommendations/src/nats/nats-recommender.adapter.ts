import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { EngineUnavailableError } from '@cdp/contracts';
import { Recommender, type RecommendationRequest, type RecommendedProduct } from '../recommender.port.js';

/** How long the API waits for the store's owner before answering 503. */
const REQUEST_TIMEOUT_MS = 5_000;

export function recommendationsSubject(prefix: string): string {
  return `${prefix}.recommendations`;
}

type Reply = { products: RecommendedProduct[] } | { error: string };

/**
 * Asks the process that owns the store (the processor, with chDB) over NATS request/reply; any
 * processor of the queue group answers.
 */
export class NatsRecommender extends Recommender {
  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
  ) {
    super();
  }

  async recommend(request: RecommendationRequest): Promise<RecommendedProduct[]> {
    let reply: Reply;
    try {
      const msg = await this.nc.request(recommendationsSubject(this.prefix), JSON.stringify(request), {
        timeout: REQUEST_TIMEOUT_MS,
      });
      reply = msg.json<Reply>();
    } catch (err) {
      throw new EngineUnavailableError('store', `no answer from the store's owner (${String(err)})`);
    }
    if ('error' in reply) throw new Error(`recommendations failed: ${reply.error}`);
    return reply.products;
  }
}

/** Answers the API's recommendation requests from the store this process owns. */
export class RecommendationsResponder {
  private readonly subscription: Subscription;

  constructor(nc: NatsConnection, prefix: string, recommender: Recommender, onError: (err: unknown) => void) {
    this.subscription = nc.subscribe(recommendationsSubject(prefix), {
      queue: 'recommenders',
      callback: (err, msg) => {
        if (err) return onError(err);
        void (async () => {
          let reply: Reply;
          try {
            reply = { products: await recommender.recommend(msg.json<RecommendationRequest>()) };
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
