import { CUSTOMER_FIELDS, EVENT_COLUMN_FIELDS, EVENT_DATA_FIELDS } from '@cdp/domain';

/**
 * The tables of one account's database, in ClickHouse SQL that chDB and a ClickHouse server both run.
 *
 * `non_replicated_deduplication_window` makes a MergeTree remember the last inserts' deduplication
 * tokens, so re-sending the same insert after a crash stores nothing twice.
 */
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

export function accountTables(db: string): string[] {
  const eventColumns = EVENT_COLUMN_FIELDS.map((f) => `  ${f} ${columnType(EVENT_DATA_FIELDS[f]!)}`).join(
    ',\n',
  );
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
  ];
}
