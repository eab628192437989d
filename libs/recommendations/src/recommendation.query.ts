import { CO_SHARDED_SETTING, IDENTITY_MERGES, coShardedIn } from '@cdp/store';
import {
  BEST_SELLER_DAYS,
  BOUGHT_WINDOW_DAYS,
  CANDIDATES_PER_KIND,
  REC_INTERACTIONS,
} from './recommendations.sql.js';

/** Columns of `products` that are the platform's, not the product's. */
export const INTERNAL_PRODUCT_COLUMNS = ['version', 'msg_id', 'updated_at', 'field_at'];

/** Small reads: one thread each, so that many requests at once do not fight over the cores. */
const SMALL = 'SETTINGS max_threads = 1';

/** Whose history goes to whom: each merged customer's latest survivor. */
const SURVIVORS = `SELECT loser, argMax(survivor, seq) AS survivor FROM {db}.identity_merges GROUP BY loser`;

/**
 * Who was merged into the customers `{customers}`, two generations of merges deep (`survivor` is an
 * asked customer, or one merged into one): their history is the customer's.
 */
const MERGED = `SELECT loser, survivor FROM (${SURVIVORS}) WHERE survivor IN {customers:Array(String)}
UNION ALL
SELECT loser, survivor FROM (${SURVIVORS}) WHERE survivor GLOBAL IN (
  SELECT loser FROM (${SURVIVORS}) WHERE survivor IN {customers:Array(String)})`;

/**
 * The histories of the customers `{customers}`, many in one statement (requests' look-ups are batched),
 * whoever was merged into them included: the merges (`merged`: `whose` went into `product_id`), then
 * every refreshed interaction of each (`ms` its time, `w` its weight, `kind`), from which the latest
 * are the seeds and the purchases of the last 180 days are left out. `rec_interactions` is ordered by
 * customer and the key serves the set the subquery makes: a few granules a customer. (Kept this plain:
 * the same with the seeds and purchases cut in SQL, by LIMIT BY and a second read, took 10–30× longer
 * on chDB.)
 */
export const HISTORIES_SQL = `SELECT 'merged' AS kind, loser AS whose, survivor AS product_id, 0 AS ms, 0. AS w FROM (${MERGED})
UNION ALL
SELECT kind, svc_id AS whose, product_id, toUnixTimestamp64Milli(ts) AS ms, w FROM {db}.rec_interactions
WHERE svc_id GLOBAL IN (SELECT arrayJoin({customers:Array(String)}) UNION ALL SELECT loser FROM (${MERGED}))
${SMALL}`;

/**
 * The purchases no finished refresh generation up to `{gen}` took in yet, of every customer: the line
 * items of messages committed since `{since}` — `{gen}` less the margin late commits are picked up
 * within — that no generation up to `{gen}` took (one committed at t is taken by a generation started
 * after t). `msg_id` has a bloom filter index, so only their granules are read. Read once per account
 * and process (what was stored before it listened to the purchase notices); later purchases are noticed.
 */
export const FRESH_PURCHASES_SQL = `SELECT DISTINCT svc_id, assumeNotNull(product_id) AS product_id FROM {db}.line_items
WHERE msg_id GLOBAL IN (
    SELECT msg_id FROM {db}.ingest_commits WHERE done = 1 AND at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')
      AND msg_id GLOBAL NOT IN (SELECT msg_id FROM {db}.rec_messages WHERE gen >= {since:Int64} AND gen <= {gen:UInt64}))
  AND action = 'purchase' AND product_id IS NOT NULL
  AND ts >= now64(3) - INTERVAL ${BOUGHT_WINDOW_DAYS} DAY
${SMALL}`;

/** The newest finished refresh generation (0: none yet). */
export const LATEST_GENERATION_SQL = `SELECT max(gen) AS gen FROM {db}.rec_generations ${SMALL}`;

/**
 * What the generations in (`{after}`, `{upto}`] may have changed: the products whose related lists
 * they wrote again (`rec_related`, exact: see REC_RELATED) and whose records those messages wrote; the
 * customers with new interactions; and the survivors of the merges those messages made (whose
 * histories now include the merged customers').
 */
export const CHANGES_SQL = `SELECT DISTINCT 'product' AS what, product_id AS id FROM {db}.rec_related
WHERE gen > {after:UInt64} AND gen <= {upto:UInt64}
UNION ALL
SELECT DISTINCT 'product' AS what, product_id AS id FROM {db}.products WHERE msg_id GLOBAL IN (
  SELECT msg_id FROM {db}.rec_messages WHERE gen > {after:UInt64} AND gen <= {upto:UInt64})
UNION ALL
SELECT DISTINCT 'customer' AS what, svc_id AS id FROM {db}.rec_interactions
WHERE gen > {after:UInt64} AND gen <= {upto:UInt64}
UNION ALL
SELECT DISTINCT 'merge' AS what, survivor AS id FROM {db}.identity_merges WHERE msg_id GLOBAL IN (
  SELECT msg_id FROM {db}.rec_messages WHERE gen > {after:UInt64} AND gen <= {upto:UInt64})`;

/**
 * The account's customers by their latest refreshed interaction, newest first (not those merged into
 * another: nobody asks for them), as many as a process reads ahead. Interactions and merges are both
 * sharded by the customer (the merged one): on a cluster each shard checks its own merges.
 */
export const ACTIVE_CUSTOMERS_SQL = `SELECT svc_id FROM {db}.rec_interactions
WHERE svc_id ${coShardedIn(REC_INTERACTIONS, 'svc_id', IDENTITY_MERGES, 'loser', true)} (SELECT loser FROM {db}.identity_merges)
GROUP BY svc_id ORDER BY max(ts) DESC LIMIT 100000 SETTINGS ${CO_SHARDED_SETTING}`;

/** The related lists of these products (seeds and the page's products), best first: the newest version. */
export const RELATED_SQL = `SELECT product_id, argMax(related, gen) AS related, argMax(scores, gen) AS scores
FROM {db}.rec_related WHERE product_id IN {ids:Array(String)} GROUP BY product_id ${SMALL}`;

/** The best sellers of the last days: units, then revenue. */
export const BEST_SELLERS_SQL = `SELECT product_id, sum(units) AS units, sum(revenue) AS revenue FROM {db}.rec_sales
WHERE hour >= toStartOfHour(now() - INTERVAL ${BEST_SELLER_DAYS} DAY)
GROUP BY product_id HAVING units > 0
ORDER BY units DESC, revenue DESC, product_id LIMIT ${CANDIDATES_PER_KIND} ${SMALL}`;

/** The records of these products, every base and custom field. */
export const PRODUCTS_SQL = `SELECT * EXCEPT (${INTERNAL_PRODUCT_COLUMNS.join(', ')}) FROM {db}.products FINAL
WHERE product_id IN {ids:Array(String)} ${SMALL}`;
