import type { RecommendationRules } from './recommendation-rules.js';
import {
  BEST_SELLER_DAYS,
  BOUGHT_WINDOW_DAYS,
  CANDIDATES_PER_KIND,
  DECAY_EPOCH_MS,
  HALF_LIFE_MS,
  SEED_INTERACTIONS,
} from './recommendations.sql.js';

/** Columns of `products` that are the platform's, not the product's. */
export const INTERNAL_PRODUCT_COLUMNS = ['version', 'msg_id', 'updated_at'];

/** Tiers of the rank, best first: related to the page's products, to the customer's, best sellers. */
export const TIERS = ['contextual', 'personal', 'best_sellers'] as const;

/** Schema names are lower snake case; nothing else reaches SQL as a name. */
function column(name: string): string {
  if (!/^[a-z][a-z0-9_]{0,63}$/.test(name)) throw new Error(`not a field name: ${name}`);
  return `p.${name}`;
}

/**
 * The filter of the account's rules over `products AS p`, with its parameters. `columns` are the
 * product table's columns: a required flag the table has no column for yet is true for no product.
 */
export function rulesFilter(
  rules: RecommendationRules,
  columns: ReadonlySet<string>,
): { sql: string; params: Record<string, unknown> } {
  const where: string[] = [];
  const params: Record<string, unknown> = {};
  if (rules.exclude_categories?.length) {
    where.push(
      `NOT arrayExists(x -> ifNull(p.category, '') = x OR startsWith(ifNull(p.category, ''), concat(x, ' > ')), {excluded_categories:Array(String)})`,
    );
    params.excluded_categories = rules.exclude_categories;
  }
  if (rules.require_image) where.push(`ifNull(p.image_url, '') != ''`);
  if (rules.require_price) where.push('p.price IS NOT NULL');
  if (rules.min_price !== undefined) {
    where.push('ifNull(p.price >= {min_price:Float64}, false)');
    params.min_price = rules.min_price;
  }
  if (rules.max_price !== undefined) {
    where.push('ifNull(p.price <= {max_price:Float64}, false)');
    params.max_price = rules.max_price;
  }
  for (const flag of rules.require_true ?? []) {
    where.push(columns.has(flag) ? `ifNull(${column(flag)}, false) = true` : 'false');
  }
  return { sql: where.length ? where.join(' AND ') : 'true', params };
}

/**
 * One request's ranking, in one statement: the customer (and whoever was merged into them), their
 * latest interactions as seeds, the page's products as context; related products from the affinity
 * table, normalised by popularity (cosine); the best sellers of the last days; the customer's purchases
 * of the last 180 days read straight from `line_items` (a purchase stored a moment ago counts); then the
 * product records that pass the rules, best tier first, best score first.
 */
export function recommendationSql(filter: string): string {
  return `WITH
  customers AS (
    SELECT {customer:String} AS svc_id WHERE svc_id != ''
    UNION ALL SELECT svc_id FROM {db}.customer_survivors WHERE survivor = {customer:String}
    UNION ALL SELECT svc_id FROM {db}.customer_survivors
      WHERE survivor IN (SELECT svc_id FROM {db}.customer_survivors WHERE survivor = {customer:String})
  ),
  seeds AS (
    SELECT product_id, sum(w * exp2((toUnixTimestamp64Milli(ts) - ${DECAY_EPOCH_MS}) / ${HALF_LIFE_MS})) AS weight
    FROM (
      SELECT product_id, w, ts FROM {db}.rec_interactions WHERE svc_id IN (SELECT svc_id FROM customers)
      ORDER BY ts DESC LIMIT ${SEED_INTERACTIONS}
    ) GROUP BY product_id
  ),
  sources AS (
    SELECT product_id, 1 AS tier, weight / (SELECT max(weight) FROM seeds) AS weight FROM seeds
    UNION ALL SELECT arrayJoin({context:Array(String)}) AS product_id, 0 AS tier, 1. AS weight
  ),
  pairs AS (
    SELECT product_id AS source, related_id, sum(score) AS score FROM {db}.rec_affinities
    WHERE product_id IN (SELECT product_id FROM sources) GROUP BY source, related_id
  ),
  popularity AS (
    SELECT product_id, sum(score) AS pop FROM {db}.rec_popularity
    WHERE product_id IN (SELECT related_id FROM pairs UNION ALL SELECT product_id FROM sources)
    GROUP BY product_id
  ),
  related AS (
    SELECT product_id, tier, score, 0. AS revenue FROM (
      SELECT pairs.related_id AS product_id, sources.tier AS tier,
        sum(sources.weight * pairs.score / sqrt(ps.pop * pr.pop)) AS score
      FROM pairs
      INNER JOIN sources ON sources.product_id = pairs.source
      INNER JOIN popularity AS ps ON ps.product_id = pairs.source
      INNER JOIN popularity AS pr ON pr.product_id = pairs.related_id
      GROUP BY product_id, tier
      ORDER BY score DESC LIMIT ${CANDIDATES_PER_KIND} BY tier
    )
  ),
  best AS (
    SELECT product_id, 2 AS tier, sum(units) AS score, sum(revenue) AS revenue FROM {db}.rec_sales
    WHERE hour >= toStartOfHour(now() - INTERVAL ${BEST_SELLER_DAYS} DAY)
    GROUP BY product_id HAVING score > 0
    ORDER BY score DESC, revenue DESC LIMIT ${CANDIDATES_PER_KIND}
  ),
  bought AS (
    SELECT assumeNotNull(product_id) AS product_id FROM {db}.line_items
    WHERE svc_id IN (SELECT svc_id FROM customers) AND action = 'purchase' AND product_id IS NOT NULL
      AND ts >= now64(3) - INTERVAL ${BOUGHT_WINDOW_DAYS} DAY
  ),
  candidates AS (
    SELECT product_id, min(tier) AS best_tier, argMin(score, tier) AS best_score, max(revenue) AS sold
    FROM (SELECT * FROM related UNION ALL SELECT * FROM best)
    WHERE product_id NOT IN (SELECT product_id FROM bought) AND product_id NOT IN {context:Array(String)}
    GROUP BY product_id
  )
SELECT p.* EXCEPT (${INTERNAL_PRODUCT_COLUMNS.join(', ')}), c.best_tier AS _tier
FROM {db}.products AS p FINAL
INNER JOIN candidates AS c ON c.product_id = p.product_id
WHERE p.product_id IN (SELECT product_id FROM candidates) AND (${filter})
ORDER BY c.best_tier, c.best_score DESC, c.sold DESC, p.product_id
LIMIT {limit:UInt32}`;
}
