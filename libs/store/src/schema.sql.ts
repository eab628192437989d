import {
  CUSTOMER_FIELDS,
  EVENT_COLUMN_FIELDS,
  EVENT_DATA_FIELDS,
  ORDER_FIELDS,
  ORDER_VALUE_FIELDS,
  PRODUCT_FIELDS,
} from '@cdp/domain';

/**
 * The tables of one account's database, in ClickHouse SQL that chDB and a ClickHouse server both run.
 *
 * `non_replicated_deduplication_window` makes a MergeTree remember the last inserts' deduplication
 * tokens, so re-sending the same insert after a crash stores nothing twice.
 */
/** Where the write of every message is bracketed (begun, done). */
export const COMMITS_TABLE = 'ingest_commits';

const DEDUP = 'SETTINGS non_replicated_deduplication_window = 10000';

function columnType(type: string): string {
  switch (type) {
    case 'integer':
      return 'Nullable(Int64)';
    case 'number':
      return 'Nullable(Float64)';
    case 'boolean':
      return 'Nullable(Bool)';
    default:
      return 'Nullable(String)';
  }
}

/**
 * `svc_id` is the internal customer id the platform assigns (spec "Identifiers": "assigns an internal
 * user id"); `customer_id` stays the sender's own id.
 */

/** Account ids are generated as lower-case letters, digits and `_`; nothing else reaches SQL as a name. */
export function databaseName(account: string): string {
  if (!/^[a-z0-9_]{1,64}$/.test(account)) throw new Error(`not an account id: ${account}`);
  return `cdp_${account}`;
}

export const CUSTOMER_COLUMNS = Object.keys(CUSTOMER_FIELDS);
export const PRODUCT_COLUMNS = Object.keys(PRODUCT_FIELDS).filter((f) => f !== 'product_id');

export function accountTables(db: string): string[] {
  const eventColumns = EVENT_COLUMN_FIELDS.map((f) => `  ${f} ${columnType(EVENT_DATA_FIELDS[f]!)}`).join(
    ',\n',
  );
  const orderColumns = ORDER_VALUE_FIELDS.map((f) => `  ${f} ${columnType(ORDER_FIELDS[f]!)}`).join(',\n');
  const productColumns = PRODUCT_COLUMNS.map((f) => `  ${f} ${columnType(PRODUCT_FIELDS[f]!)}`).join(',\n');
  const customerColumns = CUSTOMER_COLUMNS.map((f) => `  ${f} ${columnType(CUSTOMER_FIELDS[f]!)}`).join(
    ',\n',
  );
  return [
    `CREATE DATABASE IF NOT EXISTS ${db}`,
    `CREATE TABLE IF NOT EXISTS ${db}.identity_links (
  kind LowCardinality(String),
  value String,
  svc_id String,
  born String,
  msg_id String,
  created_at DateTime64(3, 'UTC'),
  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = MergeTree ORDER BY (kind, value) ${DEDUP}`,
    `CREATE TABLE IF NOT EXISTS ${db}.identity_merges (
  loser String,
  survivor String,
  seq UInt64,
  cause Array(String),
  msg_id String,
  created_at DateTime64(3, 'UTC'),
  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = MergeTree ORDER BY (loser, seq) ${DEDUP}`,
    `CREATE TABLE IF NOT EXISTS ${db}.identity_conflicts (
  svc_id String,
  other_svc_id String,
  reason LowCardinality(String),
  cause Array(String),
  msg_id String,
  created_at DateTime64(3, 'UTC'),
  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = MergeTree ORDER BY (svc_id, created_at) ${DEDUP}`,
    // Where a customer's history belongs now: itself, unless it was merged (the latest merge names the survivor).
    `CREATE VIEW IF NOT EXISTS ${db}.customer_survivors AS
SELECT loser AS svc_id, argMax(survivor, seq) AS survivor FROM ${db}.identity_merges GROUP BY loser`,
    `CREATE TABLE IF NOT EXISTS ${db}.customers (
  svc_id String,
  version UInt64,
  msg_id String,
  updated_at DateTime64(3, 'UTC'),
  merged_into Nullable(String),
${customerColumns},
  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = ReplacingMergeTree(version) ORDER BY svc_id ${DEDUP}`,
    // Set on every row of a customer a compliance opt-out redacted (spec "Compliance opt-out").
    `ALTER TABLE ${db}.customers ADD COLUMN IF NOT EXISTS redacted Bool DEFAULT false`,
    `CREATE TABLE IF NOT EXISTS ${db}.events (
  event_id String,
  msg_id String,
  svc_id String,
  ts DateTime64(3, 'UTC'),
  received_at DateTime64(3, 'UTC'),
  type LowCardinality(String),
  action LowCardinality(String),
  channel LowCardinality(String),
  identifiers Map(String, String),
${eventColumns},
  \`order\` Nullable(String),
  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = MergeTree ORDER BY (svc_id, ts, event_id) ${DEDUP}`,
    // Event fields added after an account's table was created get their column now (no-op otherwise).
    ...EVENT_COLUMN_FIELDS.map(
      (f) => `ALTER TABLE ${db}.events ADD COLUMN IF NOT EXISTS ${f} ${columnType(EVENT_DATA_FIELDS[f]!)}`,
    ),
    `CREATE TABLE IF NOT EXISTS ${db}.consent_history (
  svc_id String,
  list_id String,
  subscribed Bool,
  version UInt64,
  identifier_kind LowCardinality(String),
  identifier_value String,
  api_key String,
  source LowCardinality(String),
  msg_id String,
  changed_at DateTime64(3, 'UTC'),
  stored_at DateTime64(3, 'UTC'),
  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = MergeTree ORDER BY (svc_id, list_id, version) ${DEDUP}`,
    // Changes of per-identifier state (consent, reachability, metadata), replayed in `version` order per
    // identifier to rebuild the hot IdentifierState. `change` is the change as JSON.
    `CREATE TABLE IF NOT EXISTS ${db}.identifier_updates (
  field LowCardinality(String),
  value String,
  version UInt64,
  type LowCardinality(String),
  change String,
  svc_id String,
  api_key String,
  msg_id String,
  changed_at DateTime64(3, 'UTC'),
  stored_at DateTime64(3, 'UTC'),
  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = MergeTree ORDER BY (field, value, version) ${DEDUP}`,
    // Compliance opt-outs (spec "Compliance opt-out"): the audit of every request, and the pool of
    // opted-out identifiers the hot pool is rebuilt from. Identifiers are written `kind:value`.
    `CREATE TABLE IF NOT EXISTS ${db}.optout_requests (
  msg_id String,
  requester String,
  api_key String,
  requested_at DateTime64(3, 'UTC'),
  processed_at DateTime64(3, 'UTC'),
  sent Array(String),
  phone Nullable(String),
  customers Array(String),
  identifiers Array(String)
) ENGINE = MergeTree ORDER BY (requested_at, msg_id) ${DEDUP}`,
    `CREATE TABLE IF NOT EXISTS ${db}.optout_pool (
  kind LowCardinality(String),
  value String,
  msg_id String,
  created_at DateTime64(3, 'UTC')
) ENGINE = MergeTree ORDER BY (kind, value) ${DEDUP}`,
    // Brackets around each message's writes: a `done = 0` row before the first, a `done = 1` row after
    // the last. A message with the first and not the second was cut short; rebuilds leave its rows out
    // (see AnalyticStore.begin and commit).
    `CREATE TABLE IF NOT EXISTS ${db}.${COMMITS_TABLE} (
  msg_id String,
  done UInt8,
  at DateTime64(3, 'UTC')
) ENGINE = MergeTree ORDER BY msg_id ${DEDUP}`,
    // The log of applied order changes, replayed in `seq` order to rebuild the order state.
    `CREATE TABLE IF NOT EXISTS ${db}.order_changes (
  change_id String,
  msg_id String,
  order_id String,
  seq UInt64,
  kind LowCardinality(String),
  action LowCardinality(String),
  ts_ms Int64,
  svc_id Nullable(String),
  subtotal Nullable(Int64),
  total Nullable(Int64),
  fields String,
  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = MergeTree ORDER BY (order_id, seq) ${DEDUP}`,
    // An order's summary after each batch that touched it. Versions come from the atomic order state,
    // one per applied change: the highest is the current summary whatever order replicas insert in, and a
    // redelivered message re-inserts the same version. Read it with FINAL.
    `CREATE TABLE IF NOT EXISTS ${db}.orders (
  order_id String,
  version UInt64,
  msg_id String,
  updated_at DateTime64(3, 'UTC'),
  svc_id Nullable(String),
  purchased Bool,
  ts Nullable(DateTime64(3, 'UTC')),
  subtotal Float64,
  total Float64,
  revenue Float64,
  counts_for_lifecycle Bool,
  cancelled Bool,
  partial Bool,
  adjustments UInt32,
${orderColumns},
  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = ReplacingMergeTree(version) ORDER BY order_id ${DEDUP}`,
    `CREATE TABLE IF NOT EXISTS ${db}.line_items (
  line_item_id String,
  event_id String,
  msg_id String,
  order_id String,
  svc_id String,
  ts DateTime64(3, 'UTC'),
  event LowCardinality(String),
  action LowCardinality(String),
  product_id Nullable(String),
  sku Nullable(String),
  price Nullable(Float64),
  quantity Nullable(Float64),
  discount Nullable(Float64),
  subtotal Nullable(Float64),
  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = MergeTree ORDER BY (order_id, line_item_id) ${DEDUP}`,
    // The product feed has no history (spec "Product fields"): the highest version replaces the rest.
    `CREATE TABLE IF NOT EXISTS ${db}.products (
  product_id String,
  version UInt64,
  msg_id String,
  updated_at DateTime64(3, 'UTC'),
${productColumns},
  INDEX msg_idx msg_id TYPE bloom_filter GRANULARITY 4
) ENGINE = ReplacingMergeTree(version) ORDER BY product_id ${DEDUP}`,
  ];
}
