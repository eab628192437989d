import {
  BEST_SELLER_DAYS,
  BOUGHT_WINDOW_DAYS,
  CANDIDATES_PER_KIND,
  SEED_INTERACTIONS,
} from './recommendations.sql.js';

/** Columns of `products` that are the platform's, not the product's. */
export const INTERNAL_PRODUCT_COLUMNS = ['version', 'msg_id', 'updated_at'];

/** Small reads: one thread each, so that many requests at once do not fight over the cores. */
const SMALL = 'SETTINGS max_threads = 1';

/**
 * Whoever was merged into the `{customers}` (two generations of merges: `survivor` is an asked customer
 * or one merged into one): their history is the customer's.
 */
export const MERGED_SQL = `SELECT svc_id, survivor FROM {db}.customer_survivors
WHERE survivor IN {customers:Array(String)}
  OR survivor IN (SELECT svc_id FROM {db}.customer_survivors WHERE survivor IN {customers:Array(String)})
${SMALL}`;

/**
 * The refreshed interactions of the customers `{ids}` (the asked ones and whoever was merged into them),
 * many customers in one statement (requests' look-ups are batched): the latest of each (`seed`, `ms` the
 * time, `weight` by kind) and their purchases of the last 180 days (`bought`). `rec_interactions` is
 * ordered by customer: a few granules each. (Named ids, not a subquery: that would read every granule.)
 */
export const HISTORIES_SQL = `SELECT 'seed' AS kind, whose, product_id, ms, weight FROM (
  -- Subqueries: an alias would otherwise shadow the column it is made of.
  SELECT svc_id AS whose, product_id, toUnixTimestamp64Milli(ts) AS ms, w AS weight FROM {db}.rec_interactions
  WHERE svc_id IN {ids:Array(String)} ORDER BY svc_id, ts DESC LIMIT ${SEED_INTERACTIONS} BY svc_id
)
UNION ALL
SELECT DISTINCT 'bought' AS kind, whose, product_id, 0 AS ms, 0. AS weight FROM (
  SELECT svc_id AS whose, product_id FROM {db}.rec_interactions
  WHERE svc_id IN {ids:Array(String)} AND kind = 'purchase' AND ts >= now64(3) - INTERVAL ${BOUGHT_WINDOW_DAYS} DAY
)
${SMALL}`;

/**
 * The purchases no finished refresh generation up to `{gen}` took in yet, of every customer: the line
 * items of messages committed since `{since}` — `{gen}` less the margin late commits are picked up
 * within — that no generation up to `{gen}` took (one committed at t is taken by a generation started
 * after t). Once everything is refreshed that is no message at all; `msg_id` has a bloom filter index,
 * so otherwise only their granules are read. Read in the background per account, not per request.
 */
export const FRESH_PURCHASES_SQL = `SELECT DISTINCT svc_id, assumeNotNull(product_id) AS product_id FROM {db}.line_items
WHERE msg_id IN (
    SELECT msg_id FROM {db}.ingest_commits WHERE done = 1 AND at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')
      AND msg_id NOT IN (SELECT msg_id FROM {db}.rec_messages WHERE gen >= {since:Int64} AND gen <= {gen:UInt64}))
  AND action = 'purchase' AND product_id IS NOT NULL
  AND ts >= now64(3) - INTERVAL ${BOUGHT_WINDOW_DAYS} DAY
${SMALL}`;

/** The newest finished refresh generation (0: none yet). */
export const LATEST_GENERATION_SQL = `SELECT max(gen) AS gen FROM {db}.rec_generations ${SMALL}`;

/**
 * What the generations in (`{after}`, `{upto}`] may have changed: the products whose related products
 * they changed — every product of a customer with new interactions (a new interaction relates to all
 * of them) — and whose records those messages wrote; the customers with new interactions; and the
 * survivors of the merges those messages made (whose histories now include the merged customers').
 */
export const CHANGES_SQL = `SELECT DISTINCT 'product' AS what, product_id AS id FROM {db}.rec_interactions
WHERE svc_id IN (
  SELECT DISTINCT svc_id FROM {db}.rec_interactions WHERE gen > {after:UInt64} AND gen <= {upto:UInt64})
UNION ALL
SELECT DISTINCT 'product' AS what, product_id AS id FROM {db}.products WHERE msg_id IN (
  SELECT msg_id FROM {db}.rec_messages WHERE gen > {after:UInt64} AND gen <= {upto:UInt64})
UNION ALL
SELECT DISTINCT 'customer' AS what, svc_id AS id FROM {db}.rec_interactions
WHERE gen > {after:UInt64} AND gen <= {upto:UInt64}
UNION ALL
SELECT DISTINCT 'merge' AS what, survivor AS id FROM {db}.identity_merges WHERE msg_id IN (
  SELECT msg_id FROM {db}.rec_messages WHERE gen > {after:UInt64} AND gen <= {upto:UInt64})`;

/** The affinities of the source products (seeds and the page's products). */
export const PAIRS_SQL = `SELECT product_id AS source, related_id AS related, sum(score) AS score
FROM {db}.rec_affinities WHERE product_id IN {sources:Array(String)}
GROUP BY source, related ${SMALL}`;

/** Decayed interest in these products: what affinities are normalised by. */
export const POPULARITY_SQL = `SELECT product_id, sum(score) AS pop FROM {db}.rec_popularity
WHERE product_id IN {ids:Array(String)} GROUP BY product_id ${SMALL}`;

/** The best sellers of the last days: units, then revenue. */
export const BEST_SELLERS_SQL = `SELECT product_id, sum(units) AS units, sum(revenue) AS revenue FROM {db}.rec_sales
WHERE hour >= toStartOfHour(now() - INTERVAL ${BEST_SELLER_DAYS} DAY)
GROUP BY product_id HAVING units > 0
ORDER BY units DESC, revenue DESC, product_id LIMIT ${CANDIDATES_PER_KIND} ${SMALL}`;

/** The records of these products, every base and custom field. */
export const PRODUCTS_SQL = `SELECT * EXCEPT (${INTERNAL_PRODUCT_COLUMNS.join(', ')}) FROM {db}.products FINAL
WHERE product_id IN {ids:Array(String)} ${SMALL}`;
