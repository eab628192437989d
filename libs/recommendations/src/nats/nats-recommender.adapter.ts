import type { NatsConnection } from '@nats-io/transport-node';
import { askStoreOwner, StoreOwnerResponder, type StoreOwnerRequests } from '@cdp/store/nats';
import { Recommender, type RecommendationRequest, type RecommendedProduct } from '../recommender.port.js';

export function recommendationsSubject(prefix: string): string {
  return `${prefix}.recommendations`;
}

const requests = (prefix: string): StoreOwnerRequests => ({
  subject: recommendationsSubject(prefix),
  queue: 'recommenders',
  timeoutMs: 5_000,
  what: 'recommendations',
});

/** Asks the process that owns the store (the processor, with chDB); any processor of the queue group answers. */
export class NatsRecommender extends Recommender {
  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
  ) {
    super();
  }

  recommend(request: RecommendationRequest): Promise<RecommendedProduct[]> {
    return askStoreOwner(this.nc, requests(this.prefix), request);
  }
}

/** Answers the API's recommendation requests from the store this process owns. */
export class RecommendationsResponder extends StoreOwnerResponder<
  RecommendationRequest,
  RecommendedProduct[]
> {
  constructor(nc: NatsConnection, prefix: string, recommender: Recommender, onError: (err: unknown) => void) {
    super(nc, requests(prefix), (request) => recommender.recommend(request), onError);
  }
}
