import type { RecommendationRules } from './recommendation-rules.js';

/** Why a product is recommended (docs/api-notes.md "Recommendations"). */
export type RecommendationType = 'contextual' | 'personal' | 'best_sellers';

/** One recommendation request, the customer already resolved by the API. */
export interface RecommendationRequest {
  account: string;
  /** The customer's internal id (the survivor of any merge), or undefined for nobody known. */
  customer: string | undefined;
  /** Products the page shows (a product page, a cart): related ones first, these never. */
  productIds: string[];
  /** 1–100. */
  limit: number;
  /** A product field to order the answer by; undefined: the recommendation rank. */
  sort: string | undefined;
  order: 'asc' | 'desc';
  rules: RecommendationRules;
}

/** A product record as stored (every base and custom field there is a column for), and why. */
export type RecommendedProduct = Record<string, unknown> & {
  product_id: string;
  recommendation_type: RecommendationType;
};

/**
 * Recommendations are computed where the store is: in this process when it holds the store, or by the
 * store's owner (the processor with chDB) when asked over NATS.
 */
export abstract class Recommender {
  abstract recommend(request: RecommendationRequest): Promise<RecommendedProduct[]>;
}
