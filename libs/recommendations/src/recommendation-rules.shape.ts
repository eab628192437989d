// Imports nothing, so the console's bundle can import this type without pulling in the server.

/**
 * The default filtering rules of an account's recommendations (spec "Recommendations": "configured by
 * the operator of the account"), applied to every answer. Absent rules filter nothing.
 */
export interface RecommendationRules {
  /** Categories left out, each with everything beneath it (`Electronics > Computers` leaves out laptops too). */
  exclude_categories?: string[];
  /** Leave out products without an `image_url`. */
  require_image?: boolean;
  /** Leave out products without a `price`. */
  require_price?: boolean;
  /** Only products priced at least this (a product without a price is left out when a bound is set). */
  min_price?: number;
  /** Only products priced at most this. */
  max_price?: number;
  /** Custom boolean product fields that must be true (e.g. `in_stock`). */
  require_true?: string[];
}
