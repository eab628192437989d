import {
  CO_SHARDED_SETTING,
  INGEST_COMMITS,
  ch,
  coShardedIn,
  defineTable,
  type TableDeclaration,
} from '@cdp/store';

/**
 * The recommendation tables of an account's database, and the SQL that builds and reads them. Plain
 * ClickHouse SQL (chDB and a server run the same); `{db}` names the account's database.
 *
 * Time decay without rewriting rows: a contribution made at time t is stored multiplied by
 * 2^((t − EPOCH) / HALF_LIFE). Every score is a sum of such terms, so comparing two scores now is the
 * same as comparing them decayed to now (the common factor 2^(−(now − EPOCH) / HALF_LIFE) cancels),
 * and a refresh only ever adds rows. Float64 holds the factor until about 2100.
 */
export const DECAY_EPOCH_MS = Date.UTC(2024, 0, 1);
export const HALF_LIFE_MS = 30 * 86_400_000;
/** Two interactions of one customer further apart than this are not related. */
export const PAIR_WINDOW_MS = 90 * 86_400_000;
/** Interaction weights: a purchase says more than an add to cart, which says more than a look. */
export const WEIGHTS = { detail: 1, add_to_cart: 2, purchase: 3 } as const;
/** How far back a purchase keeps a product out of the customer's recommendations. */
export const BOUGHT_WINDOW_DAYS = 180;
/** The best sellers' window. */
export const BEST_SELLER_DAYS = 7;
/** The customer's latest interactions a personal recommendation starts from. */
export const SEED_INTERACTIONS = 50;
/** Candidates of each kind ranked per request. */
export const CANDIDATES_PER_KIND = 300;
/** Related products kept per product (`rec_related`): the candidates never need more. */
export const RELATED_PER_PRODUCT = CANDIDATES_PER_KIND;
/** Commits later than this behind the newest seen are still picked up (processors' clocks and batches). */
const LATE_COMMITS_MS = 60_000;

const decay = (ts: string) => `exp2((toUnixTimestamp64Milli(${ts}) - ${DECAY_EPOCH_MS}) / ${HALF_LIFE_MS})`;

/** The derived tables remember fewer dedup tokens than the ingest tables: a refresh inserts a few a time. */
const DEDUP_WINDOW = 1000;

/** Which committed messages a refresh generation took in (`gen`: its start in ms, increasing). */
export const REC_MESSAGES = defineTable({
  name: 'rec_messages',
  columns: { msg_id: ch.string(), gen: ch.uint64(), commit_at: ch.dateTime() },
  shardBy: ['msg_id'],
  msgIndex: false,
  engine: 'MergeTree',
  orderBy: ['gen', 'msg_id'],
  dedupWindow: null,
});

/** Generations whose derived rows are all written; one missing here is derived again after a crash. */
export const REC_GENERATIONS = defineTable({
  name: 'rec_generations',
  columns: { gen: ch.uint64(), done_at: ch.dateTime() },
  shardBy: ['gen'],
  msgIndex: false,
  engine: 'MergeTree',
  orderBy: ['gen'],
  dedupWindow: null,
});

/** A customer's interactions with products: detail views, adds to cart, purchased line items. */
export const REC_INTERACTIONS = defineTable({
  name: 'rec_interactions',
  columns: {
    svc_id: ch.string(),
    product_id: ch.string(),
    ts: ch.dateTime(),
    w: ch.float64(),
    kind: ch.lowCardinality(),
    ikey: ch.uint64(),
    gen: ch.uint64(),
  },
  shardBy: ['svc_id'],
  msgIndex: false,
  engine: 'MergeTree',
  orderBy: ['svc_id', 'ts'],
  dedupWindow: DEDUP_WINDOW,
});

/** Item-to-item affinity: decayed co-interest and co-purchase of one customer's products, both ways. */
export const REC_AFFINITIES = defineTable({
  name: 'rec_affinities',
  columns: { product_id: ch.string(), related_id: ch.string(), score: ch.float64() },
  shardBy: ['product_id'],
  msgIndex: false,
  engine: 'SummingMergeTree',
  orderBy: ['product_id', 'related_id'],
  dedupWindow: DEDUP_WINDOW,
});

/** Decayed interest per product: what affinities are normalised by (popular items relate to everything). */
export const REC_POPULARITY = defineTable({
  name: 'rec_popularity',
  columns: { product_id: ch.string(), score: ch.float64() },
  shardBy: ['product_id'],
  msgIndex: false,
  engine: 'SummingMergeTree',
  orderBy: ['product_id'],
  dedupWindow: DEDUP_WINDOW,
});

/**
 * Each product's top related products, best first, by cosine similarity: affinity(product, related) /
 * √(popularity(product) · popularity(related)), so products everyone touches do not relate to
 * everything. The decay factor is common to the numerator and the denominator, so a list stays exact
 * until a generation changes one of its affinities or popularities; each generation writes again the
 * lists of exactly those products (`gen` its version: the highest replaces the rest).
 */
export const REC_RELATED = defineTable({
  name: 'rec_related',
  columns: {
    product_id: ch.string(),
    gen: ch.uint64(),
    related: ch.stringArray(),
    scores: ch.float64Array(),
  },
  shardBy: ['product_id'],
  msgIndex: false,
  engine: 'ReplacingMergeTree(gen)',
  orderBy: ['product_id'],
  dedupWindow: DEDUP_WINDOW,
});

/** Units and revenue sold per hour and product, by the order's time: the best sellers' source. */
export const REC_SALES = defineTable({
  name: 'rec_sales',
  columns: {
    hour: ch.dateTimeSeconds(),
    product_id: ch.string(),
    units: ch.float64(),
    revenue: ch.float64(),
  },
  shardBy: ['product_id'],
  msgIndex: false,
  engine: 'SummingMergeTree',
  orderBy: ['hour', 'product_id'],
  dedupWindow: DEDUP_WINDOW,
});

/**
 * The recommendation tables, created by the store like the account's own (AnalyticStore.ensureTables):
 * on a cluster, Replicated on every node under Distributed tables. Each is sharded by the key its rows
 * merge by (a product's sums and related lists, a generation's record) or, for interactions, by the
 * customer, so a customer's interactions are on the shard of their events and profile; the messages
 * taken in by message, as the commit log they come from.
 */
export const REC_TABLES: readonly TableDeclaration[] = [
  REC_MESSAGES,
  REC_GENERATIONS,
  REC_INTERACTIONS,
  REC_AFFINITIES,
  REC_POPULARITY,
  REC_SALES,
  REC_RELATED,
];

/** Generations taken in but not finished (a crash in between): derived again, deduplicated. */
export const UNFINISHED_GENERATIONS = `SELECT DISTINCT gen FROM {db}.rec_messages
WHERE gen GLOBAL NOT IN (SELECT gen FROM {db}.rec_generations) ORDER BY gen`;

/**
 * How many rows the commit log has: it only grows (a message's begin and its commit each add one), so an
 * unchanged count means nothing was committed since. Answered from the parts' row counts, no data read:
 * the refresh asks every second.
 */
export const COMMIT_ROWS = `SELECT count() AS n FROM {db}.ingest_commits`;

/** The newest generation taken in (read in the table's order: its last granule only). */
export const LAST_GENERATION = `SELECT gen FROM {db}.rec_messages ORDER BY gen DESC LIMIT 1`;

/** The newest commit the generations took in (read once per account and process; then noted as they run). */
export const SEEN_COMMITS = `SELECT toUnixTimestamp64Milli(max(commit_at)) AS seen_ms FROM {db}.rec_messages`;

/** The newest commit generation `{gen}` took in. */
export const SEEN_IN_GENERATION = `SELECT toUnixTimestamp64Milli(max(commit_at)) AS seen_ms FROM {db}.rec_messages
WHERE gen = {gen:UInt64}`;

/**
 * Takes in every committed message not yet taken, as generation {gen}. Commits are found from the
 * newest seen minus a margin, and the ones already taken in that margin are skipped by id (a message
 * committed then was taken by a generation started after it: `gen` is its start, in the same clock).
 * The commit log and the messages taken are both sharded by message: on a cluster each shard checks
 * its own (distributed-reads.ts).
 */
export const TAKE_MESSAGES = `INSERT INTO {db}.rec_messages (msg_id, gen, commit_at)
SELECT msg_id, {gen:UInt64}, max(at) FROM {db}.ingest_commits
WHERE done = 1 AND at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')
  AND msg_id ${coShardedIn(INGEST_COMMITS, 'msg_id', REC_MESSAGES, 'msg_id', true)} (
    SELECT msg_id FROM {db}.rec_messages WHERE gen >= {since:Int64} - ${LATE_COMMITS_MS})
GROUP BY msg_id SETTINGS ${CO_SHARDED_SETTING}`;

export { LATE_COMMITS_MS };

export const GENERATION_SIZE = `SELECT count() AS n FROM {db}.rec_messages WHERE gen = {gen:UInt64}`;

/** Rows of the generation's messages; a table sharded by customer needs the messages sent (GLOBAL). */
const OF_GEN = `msg_id GLOBAL IN (SELECT msg_id FROM {db}.rec_messages WHERE gen = {gen:UInt64})`;

/** The statements deriving one generation, each deduplicated by its token (a crash re-runs them). */
export const DERIVE_GENERATION: { name: string; sql: string }[] = [
  {
    name: 'interactions',
    sql: `INSERT INTO {db}.rec_interactions (svc_id, product_id, ts, w, kind, ikey, gen)
SELECT svc_id, assumeNotNull(product_id), ts, if(action = 'add_to_cart', ${WEIGHTS.add_to_cart}, ${WEIGHTS.detail}),
  action, cityHash64(event_id), {gen:UInt64}
FROM {db}.events
WHERE ${OF_GEN} AND type = 'product' AND action IN ('detail', 'add_to_cart') AND ifNull(product_id, '') != ''
UNION ALL
SELECT svc_id, assumeNotNull(product_id), ts, ${WEIGHTS.purchase}, 'purchase', cityHash64(line_item_id), {gen:UInt64}
FROM {db}.line_items
WHERE ${OF_GEN} AND action = 'purchase' AND ifNull(product_id, '') != ''`,
  },
  {
    // Each pair once: a new interaction with every older one of its customer, and with the new ones
    // before it; both directions are written. The node asked joins the two sides; the earlier
    // interactions of the generation's customers are found on each shard (sharded by customer).
    name: 'affinities',
    sql: `INSERT INTO {db}.rec_affinities (product_id, related_id, score)
SELECT pair.1, pair.2, a.w * b.w * ${decay('greatest(a.ts, b.ts)')}
FROM (SELECT svc_id, product_id, ts, w, ikey FROM {db}.rec_interactions WHERE gen = {gen:UInt64}) AS a
GLOBAL INNER JOIN (
  SELECT svc_id, product_id, ts, w, ikey, gen FROM {db}.rec_interactions
  WHERE gen <= {gen:UInt64}
    AND svc_id ${coShardedIn(REC_INTERACTIONS, 'svc_id', REC_INTERACTIONS, 'svc_id')} (SELECT svc_id FROM {db}.rec_interactions WHERE gen = {gen:UInt64})
) AS b ON a.svc_id = b.svc_id
ARRAY JOIN [(a.product_id, b.product_id), (b.product_id, a.product_id)] AS pair
WHERE a.product_id != b.product_id AND (b.gen < {gen:UInt64} OR b.ikey < a.ikey)
  AND abs(toUnixTimestamp64Milli(a.ts) - toUnixTimestamp64Milli(b.ts)) <= ${PAIR_WINDOW_MS}
SETTINGS ${CO_SHARDED_SETTING}`,
  },
  {
    name: 'popularity',
    sql: `INSERT INTO {db}.rec_popularity (product_id, score)
SELECT product_id, w * ${decay('ts')} FROM {db}.rec_interactions WHERE gen = {gen:UInt64}`,
  },
  {
    name: 'sales',
    sql: `INSERT INTO {db}.rec_sales (hour, product_id, units, revenue)
SELECT toStartOfHour(ts), assumeNotNull(product_id), ifNull(quantity, 1),
  ifNull(subtotal, ifNull(price, 0) * ifNull(quantity, 1))
FROM {db}.line_items WHERE ${OF_GEN} AND action = 'purchase' AND ifNull(product_id, '') != ''`,
  },
  {
    // The products whose related lists the generation changed: those it brought interactions with
    // (their popularity, their new pairs) and every product related to one of them (normalised by
    // its popularity). Affinities are written both ways, so those are the related ids of the former.
    name: 'related',
    sql: relatedListsOf(`SELECT product_id FROM {db}.rec_interactions WHERE gen = {gen:UInt64}
  UNION DISTINCT
  SELECT related_id FROM {db}.rec_affinities WHERE product_id GLOBAL IN (
    SELECT product_id FROM {db}.rec_interactions WHERE gen = {gen:UInt64})`),
  },
  {
    name: 'done',
    sql: `INSERT INTO {db}.rec_generations (gen, done_at) SELECT {gen:UInt64}, now64(3)`,
  },
];

/**
 * Writes, as version `{gen}`, the related lists of the products `sources` selects: every affinity of
 * each, normalised by both popularities, the best RELATED_PER_PRODUCT (ties by id).
 */
function relatedListsOf(sources: string): string {
  const popularity = `(SELECT product_id, sum(score) AS pop FROM {db}.rec_popularity GROUP BY product_id HAVING pop > 0)`;
  return `INSERT INTO {db}.rec_related (product_id, gen, related, scores)
SELECT source, {gen:UInt64}, arrayMap(x -> x.2, top), arrayMap(x -> -x.1, top) FROM (
  SELECT source, arraySlice(arraySort(groupArray((-sim, related))), 1, ${RELATED_PER_PRODUCT}) AS top FROM (
    SELECT a.source AS source, a.related AS related, a.score / sqrt(ps.pop * pr.pop) AS sim
    FROM (
      SELECT product_id AS source, related_id AS related, sum(score) AS score FROM {db}.rec_affinities
      WHERE product_id GLOBAL IN (${sources})
      GROUP BY source, related
    ) AS a
    GLOBAL INNER JOIN ${popularity} AS ps ON ps.product_id = a.source
    GLOBAL INNER JOIN ${popularity} AS pr ON pr.product_id = a.related
  )
  GROUP BY source
)`;
}

/** Every product's related list, as version `{gen}`: for tables made before `rec_related` existed. */
export const RELATED_OF_ALL = relatedListsOf(`SELECT product_id FROM {db}.rec_popularity`);

/** Whether the account has affinities but no related lists yet (its tables predate `rec_related`). */
export const RELATED_MISSING = `SELECT
  (SELECT count() FROM {db}.rec_related) = 0 AND (SELECT count() FROM {db}.rec_affinities) > 0 AS missing,
  (SELECT max(gen) FROM {db}.rec_generations) AS gen`;
