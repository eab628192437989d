import {
  CUSTOMER_FIELDS,
  EVENT_COLUMN_FIELDS,
  EVENT_DATA_FIELDS,
  ORDER_FIELDS,
  ORDER_VALUE_FIELDS,
  PRODUCT_FIELDS,
} from '@cdp/domain';
import { ch } from './column.js';
import {
  SINGLE_NODE,
  defineTable,
  onCluster,
  tableSql,
  type BatchKeyOf,
  type RowOf,
  type StoreLayout,
  type TableDeclaration,
} from './table.js';

/**
 * The tables of one account's database, in the order a batch writes them. Crash consistency does not
 * depend on this order (begin/commit brackets make a cut-short message invisible to rebuilds); links
 * first only makes reads in between find a customer for every stored event, the order change log
 * precedes what derives from it, consent changes come late (a batch that failed before them is
 * redelivered and writes them then) and the opt-out audit row last (it says the opt-out was done).
 *
 * Column names and engines are what existing data directories hold: never rename or re-engine one;
 * a new column is `ch.addedLater` (or a domain field, added on open).
 */

/**
 * Order fields a redaction keeps: the order's ids, times and amounts (and its items, which name products
 * only). Who bought it and where it went (email, phone, names, addresses) and custom fields are cleared.
 */
const ORDER_KEPT_ON_REDACTION = [
  'order_id',
  'ts',
  'total',
  'subtotal',
  'discount',
  'shipping',
  'tax',
  'coupon_code',
  'items',
];

/** Event data fields a redaction clears beside the custom ones: what identifies the person's device. */
const EVENT_PERSONAL_FIELDS = new Set(['ua', 'ip']);

/**
 * A link from an identifier to the customer it identifies; written once, when first seen. Kept by a
 * redaction: records sent later with the identifier must find (and stay with) the redacted customer.
 * A row with no identifier (kind and value '') records a born key lowered by a record that linked
 * nothing (identity resolution.ts): a rebuild gives each customer the least born key of its rows.
 */
export const IDENTITY_LINKS = defineTable({
  name: 'identity_links',
  batch: 'identityLinks',
  columns: {
    kind: ch.lowCardinality(),
    value: ch.string(),
    svc_id: ch.string(),
    /** The customer's born key (identity resolution.ts): how customers compare by age after a rebuild. */
    born: ch.string(),
    msg_id: ch.string(),
    created_at: ch.dateTime(),
  },
  msgIndex: true,
  engine: 'MergeTree',
  orderBy: ['kind', 'value'],
  shardBy: ['svc_id'],
});

/** A merge: from now on the loser's history belongs to the survivor (spec "What the service does"). */
export const IDENTITY_MERGES = defineTable({
  name: 'identity_merges',
  batch: 'merges',
  columns: {
    loser: ch.kept(ch.string()),
    survivor: ch.kept(ch.string()),
    /** The account's merge counter: for a loser merged twice, the higher seq names its survivor. */
    seq: ch.kept(ch.uint64()),
    /** The identifiers of the record that caused it, as `kind:value`. */
    cause: ch.stringArray(),
    msg_id: ch.kept(ch.string()),
    created_at: ch.kept(ch.dateTime()),
  },
  redaction: { by: 'loser' },
  msgIndex: true,
  engine: 'MergeTree',
  orderBy: ['loser', 'seq'],
  shardBy: ['loser'],
});

/** Customers a record touched but could not merge (different customer_id values, or the merge limit). */
export const IDENTITY_CONFLICTS = defineTable({
  name: 'identity_conflicts',
  batch: 'conflicts',
  columns: {
    svc_id: ch.kept(ch.string()),
    other_svc_id: ch.kept(ch.string()),
    reason: ch.kept(ch.lowCardinality()),
    cause: ch.stringArray(),
    msg_id: ch.kept(ch.string()),
    created_at: ch.kept(ch.dateTime()),
  },
  redaction: { by: 'svc_id' },
  msgIndex: true,
  engine: 'MergeTree',
  orderBy: ['svc_id', 'created_at'],
  partitionBy: 'created_at',
  shardBy: ['svc_id'],
});

/**
 * The full state of a profile after an update; the highest version of a customer is current.
 * `svc_id` is the internal customer id the platform assigns (spec "Identifiers": "assigns an internal
 * user id"); `customer_id` stays the sender's own id. A redaction keeps the bookkeeping and `opted_in`.
 */
export const CUSTOMERS = defineTable({
  name: 'customers',
  batch: 'customers',
  columns: {
    svc_id: ch.kept(ch.string()),
    version: ch.kept(ch.uint64()),
    msg_id: ch.kept(ch.string()),
    updated_at: ch.kept(ch.dateTime()),
    /** Set on a merged customer's last snapshot: the survivor that holds its profile now. */
    merged_into: ch.kept(ch.nullable(ch.string())),
    attributes: ch.fields<string | boolean | number>(CUSTOMER_FIELDS, { kept: ['opted_in'] }),
    /** Set on every snapshot of a customer a compliance opt-out redacted (spec "Compliance opt-out"). */
    redacted: ch.kept(ch.addedLater(ch.bool(), 'false')),
    /**
     * When each field was last written in acceptance order (the hot state's field times as JSON, '' for
     * none): a rebuild gives them back, so a late record cannot overwrite a newer field after it.
     */
    field_at: ch.kept(ch.addedLater(ch.string(), "''")),
  },
  msgIndex: true,
  engine: 'ReplacingMergeTree(version)',
  orderBy: ['svc_id'],
  shardBy: ['svc_id'],
  redaction: { by: 'svc_id', mark: 'redacted' },
  // A merged customer's profile lives on in its survivor: only customers that were not merged are exported.
  export: { columns: ['svc_id', 'attributes', 'updated_at'], where: 'merged_into IS NULL' },
});

/**
 * The log of applied order changes, replayed in `seq` order to rebuild the order state. Amounts in
 * 1/10000 units as sent; `fields` is the JSON of the value fields. An entity update kept pending (no
 * order event accepted before it applied yet) is logged with `seq` 0, so a rebuild keeps it pending too.
 */
export const ORDER_CHANGES = defineTable({
  name: 'order_changes',
  batch: 'orderChanges',
  columns: {
    change_id: ch.kept(ch.string()),
    msg_id: ch.kept(ch.string()),
    order_id: ch.kept(ch.string()),
    seq: ch.kept(ch.uint64()),
    kind: ch.kept(ch.lowCardinality<'event' | 'entity'>()),
    action: ch.kept(ch.lowCardinality()),
    ts_ms: ch.kept(ch.int64()),
    /** The change's place in the bus's acceptance order (0 for rows written before it was kept). */
    at: ch.addedLater(ch.kept(ch.uint64()), '0'),
    svc_id: ch.kept(ch.nullable(ch.string())),
    subtotal: ch.kept(ch.nullable(ch.int64())),
    total: ch.kept(ch.nullable(ch.int64())),
    fields: ch.keptKeys(ch.string(), ORDER_KEPT_ON_REDACTION),
  },
  // An order update names no customer (svc_id null): its changes go with the order's customer.
  redaction: { by: 'svc_id', via: { column: 'order_id', table: 'orders' } },
  msgIndex: true,
  engine: 'MergeTree',
  orderBy: ['order_id', 'seq'],
  shardBy: ['order_id'],
});

/** Events with their typed data columns; custom event fields are columns added after these. */
export const EVENTS = defineTable({
  name: 'events',
  batch: 'events',
  compact: true,
  columns: {
    event_id: ch.kept(ch.string()),
    msg_id: ch.kept(ch.string()),
    svc_id: ch.kept(ch.string()),
    ts: ch.kept(ch.dateTime()),
    received_at: ch.kept(ch.dateTime()),
    type: ch.kept(ch.lowCardinality()),
    action: ch.kept(ch.lowCardinality()),
    channel: ch.kept(ch.lowCardinality()),
    identifiers: ch.stringMap(),
    data: ch.fields<string | number | boolean>(EVENT_DATA_FIELDS, {
      names: EVENT_COLUMN_FIELDS,
      addOnOpen: true,
      kept: EVENT_COLUMN_FIELDS.filter((f) => !EVENT_PERSONAL_FIELDS.has(f)),
    }),
    /** The event's order as JSON. */
    order: ch.keptKeys(ch.nullable(ch.string()), ORDER_KEPT_ON_REDACTION),
  },
  msgIndex: true,
  engine: 'MergeTree',
  orderBy: ['svc_id', 'ts', 'event_id'],
  partitionBy: 'ts',
  retainedBy: 'ts',
  shardBy: ['svc_id'],
  redaction: { by: 'svc_id' },
  export: {
    columns: [
      'event_id',
      'svc_id',
      { name: 'customer_svc_id', survivorOf: 'svc_id' },
      'ts',
      'received_at',
      'type',
      'action',
      'channel',
      'identifiers',
      'data',
      'order',
    ],
  },
});

/**
 * One line-item event (`Order Line Item Purchase`, ...) of an order event, naming its product. It holds
 * no personal data (the internal customer id is what every redaction keeps), so a redaction leaves it.
 */
export const LINE_ITEMS = defineTable({
  name: 'line_items',
  batch: 'lineItems',
  columns: {
    line_item_id: ch.string(),
    event_id: ch.string(),
    msg_id: ch.string(),
    order_id: ch.string(),
    svc_id: ch.string(),
    ts: ch.dateTime(),
    event: ch.lowCardinality(),
    action: ch.lowCardinality(),
    product_id: ch.nullable(ch.string()),
    sku: ch.nullable(ch.string()),
    price: ch.nullable(ch.float64()),
    quantity: ch.nullable(ch.float64()),
    discount: ch.nullable(ch.float64()),
    subtotal: ch.nullable(ch.float64()),
  },
  msgIndex: true,
  engine: 'MergeTree',
  orderBy: ['order_id', 'line_item_id'],
  partitionBy: 'ts',
  retainedBy: 'ts',
  shardBy: ['svc_id'],
  export: {
    columns: [
      'order_id',
      'line_item_id',
      'event_id',
      'svc_id',
      'ts',
      'event',
      'action',
      'product_id',
      'sku',
      'price',
      'quantity',
      'discount',
      'subtotal',
    ],
  },
});

/**
 * An order's summary after each batch that touched it: running tallies, revenue and lifecycle flag.
 * Versions come from the atomic order state, one per applied change: the highest is the current
 * summary whatever order replicas insert in, and a redelivered message re-inserts the same version.
 */
export const ORDERS = defineTable({
  name: 'orders',
  batch: 'orders',
  columns: {
    order_id: ch.kept(ch.string()),
    version: ch.kept(ch.uint64()),
    msg_id: ch.kept(ch.string()),
    updated_at: ch.kept(ch.dateTime()),
    svc_id: ch.kept(ch.nullable(ch.string())),
    purchased: ch.kept(ch.bool()),
    ts: ch.kept(ch.nullable(ch.dateTime())),
    subtotal: ch.kept(ch.float64()),
    total: ch.kept(ch.float64()),
    revenue: ch.kept(ch.float64()),
    counts_for_lifecycle: ch.kept(ch.bool()),
    cancelled: ch.kept(ch.bool()),
    partial: ch.kept(ch.bool()),
    adjustments: ch.kept(ch.uint32()),
    fields: ch.fields<string | number>(ORDER_FIELDS, {
      names: ORDER_VALUE_FIELDS,
      kept: ORDER_VALUE_FIELDS.filter((f) => ORDER_KEPT_ON_REDACTION.includes(f)),
    }),
  },
  msgIndex: true,
  engine: 'ReplacingMergeTree(version)',
  orderBy: ['order_id'],
  shardBy: ['order_id'],
  redaction: { by: 'svc_id' },
  export: {
    columns: [
      'order_id',
      'svc_id',
      { name: 'customer_svc_id', survivorOf: 'svc_id' },
      'ts',
      'purchased',
      'subtotal',
      'total',
      'revenue',
      'counts_for_lifecycle',
      'cancelled',
      'partial',
      'adjustments',
      'fields',
      'updated_at',
    ],
  },
});

/** The product feed has no history (spec "Product fields"): the highest version replaces the rest. */
export const PRODUCTS = defineTable({
  name: 'products',
  batch: 'products',
  columns: {
    product_id: ch.string(),
    version: ch.uint64(),
    msg_id: ch.string(),
    updated_at: ch.dateTime(),
    /** The spec's fields and the account's custom product fields (their columns), in the store's form. */
    fields: ch.fields<string | number | boolean>(PRODUCT_FIELDS, {
      names: Object.keys(PRODUCT_FIELDS).filter((f) => f !== 'product_id'),
    }),
    /**
     * When each field was last written in acceptance order (JSON, '' for none): an update accepted
     * earlier and applied later (a retry, another processor) leaves the fields a later one wrote.
     */
    field_at: ch.addedLater(ch.string(), "''"),
  },
  msgIndex: true,
  engine: 'ReplacingMergeTree(version)',
  orderBy: ['product_id'],
  shardBy: ['product_id'],
  export: { columns: ['product_id', 'fields', 'updated_at'] },
});

/**
 * One change of a customer's consent (a list membership, or `svc_all` for global opt-in): who, what,
 * when, and through which key. The history is kept whole; the hot consent state is rebuilt from it.
 */
export const CONSENT_HISTORY = defineTable({
  name: 'consent_history',
  batch: 'consentHistory',
  columns: {
    svc_id: ch.kept(ch.string()),
    list_id: ch.kept(ch.string()),
    subscribed: ch.kept(ch.bool()),
    /** The customer's consent version after this change (orders replays). */
    version: ch.kept(ch.uint64()),
    /**
     * The change's place in the bus's acceptance order (0 for rows written before it was kept): the
     * current membership is the one with the highest, whatever order processors stored them in.
     */
    at: ch.addedLater(ch.kept(ch.uint64()), '0'),
    /** The identifier the change was sent with (its value is cleared by a redaction). */
    identifier_kind: ch.kept(ch.lowCardinality()),
    identifier_value: ch.string(),
    /** `public`, or `private:<key id>`. */
    api_key: ch.kept(ch.string()),
    /** Where the change came from: `subscriptions` (POST /v3/lists/subscriptions). */
    source: ch.kept(ch.lowCardinality()),
    msg_id: ch.kept(ch.string()),
    /** When the API accepted the request. */
    changed_at: ch.kept(ch.dateTime()),
    stored_at: ch.kept(ch.dateTime()),
  },
  msgIndex: true,
  engine: 'MergeTree',
  orderBy: ['svc_id', 'list_id', 'version'],
  partitionBy: 'changed_at',
  shardBy: ['svc_id'],
  redaction: { by: 'svc_id' },
});

/**
 * One change of an identifier's state (`POST /v3/consent`, `/v3/reachability`, `/v3/identifiers`),
 * replayed in `version` order per identifier to rebuild the hot IdentifierState. Kept by a redaction,
 * like the opt-out pool: keyed by the identifier, it is the record of whether it may be contacted.
 */
export const IDENTIFIER_UPDATES = defineTable({
  name: 'identifier_updates',
  batch: 'identifierUpdates',
  columns: {
    field: ch.lowCardinality(),
    value: ch.string(),
    /** The identifier's version after this change (rebuilds replay in this order). */
    version: ch.uint64(),
    type: ch.lowCardinality(),
    /** The change without field and value, as JSON (IdentifierState's `changeBody`). */
    change: ch.string(),
    /** The customer the identifier resolved to. */
    svc_id: ch.string(),
    /** `public`, or `private:<key id>`. */
    api_key: ch.string(),
    msg_id: ch.string(),
    /** The sender's update time, or when the API accepted the request. */
    changed_at: ch.dateTime(),
    stored_at: ch.dateTime(),
  },
  msgIndex: true,
  engine: 'MergeTree',
  orderBy: ['field', 'value', 'version'],
  partitionBy: 'changed_at',
  shardBy: ['field', 'value'],
});

/** An identifier in the compliance opt-out pool the hot pool is rebuilt from (what stays redacted). */
export const OPTOUT_POOL = defineTable({
  name: 'optout_pool',
  batch: 'optoutPool',
  columns: {
    kind: ch.lowCardinality(),
    value: ch.string(),
    msg_id: ch.string(),
    created_at: ch.dateTime(),
  },
  msgIndex: false,
  engine: 'MergeTree',
  orderBy: ['kind', 'value'],
  shardBy: ['kind', 'value'],
});

/** The audit of one compliance opt-out: who asked, when, through which key, and what it reached. */
export const OPTOUT_REQUESTS = defineTable({
  name: 'optout_requests',
  batch: 'optoutRequests',
  columns: {
    /** The request id. */
    msg_id: ch.string(),
    requester: ch.string(),
    /** `private:<key id>`. */
    api_key: ch.string(),
    requested_at: ch.dateTime(),
    processed_at: ch.dateTime(),
    /** The identifiers sent, `kind:value`. */
    sent: ch.stringArray(),
    /** The phone sent, if any (matched exactly against profiles; not an identifier). */
    phone: ch.nullable(ch.string()),
    /** The customers redacted. */
    customers: ch.stringArray(),
    /** Every identifier added to the opt-out pool, `kind:value`. */
    identifiers: ch.stringArray(),
  },
  msgIndex: false,
  engine: 'MergeTree',
  orderBy: ['requested_at', 'msg_id'],
  partitionBy: 'requested_at',
  shardBy: ['msg_id'],
});

/**
 * Brackets around each message's writes: a `done = 0` row before the first, a `done = 1` row after the
 * last. A message with the first and not the second was cut short; rebuilds leave its rows out (see
 * AnalyticStore.begin and commit).
 */
export const INGEST_COMMITS = defineTable({
  name: 'ingest_commits',
  columns: { msg_id: ch.string(), done: ch.uint8(), at: ch.dateTime() },
  msgIndex: false,
  engine: 'MergeTree',
  orderBy: ['msg_id'],
  shardBy: ['msg_id'],
});

/**
 * Records the API refused before its 202 (a 4xx of an ingestion route) or accepted with fields dropped,
 * counted per minute, outcome, type and reason: what the console's overview charts. Never a record's
 * body, only counts. The API sums them in memory and writes a few rows every few seconds (the console's
 * RejectionTap, through AnalyticStore.addRejections: the processor never writes it, so it is no crash
 * point of the write path); `msg_id` is that write's id, so a write sent twice is stored once. The rows of one key
 * add up as the engine merges them: reads sum `records`.
 */
export const INGEST_REJECTIONS = defineTable({
  name: 'ingest_rejections',
  columns: {
    minute: ch.dateTime(),
    /** `rejected` (refused before the 202) or `dropped` (a field left out of an accepted record). */
    outcome: ch.lowCardinality(),
    /** The record's event type, or the route's kind of record (`profiles`, `orders`, …). */
    type: ch.string(),
    reason: ch.string(),
    records: ch.uint64(),
    msg_id: ch.string(),
  },
  msgIndex: false,
  engine: 'SummingMergeTree',
  orderBy: ['minute', 'outcome', 'type', 'reason'],
  partitionBy: 'minute',
  retainedBy: 'minute',
  shardBy: ['minute'],
});

/** Every table of an account, in write order. */
export const ACCOUNT_TABLES = [
  IDENTITY_LINKS,
  IDENTITY_MERGES,
  IDENTITY_CONFLICTS,
  CUSTOMERS,
  ORDER_CHANGES,
  EVENTS,
  LINE_ITEMS,
  ORDERS,
  PRODUCTS,
  CONSENT_HISTORY,
  IDENTIFIER_UPDATES,
  OPTOUT_POOL,
  OPTOUT_REQUESTS,
  INGEST_COMMITS,
  INGEST_REJECTIONS,
] as const satisfies readonly TableDeclaration[];

/** The tables an account's events retention applies to (events and their line items). */
export const RETAINED_TABLES = ACCOUNT_TABLES.filter((t) => 'retainedBy' in t && t.retainedBy !== undefined);

/** Where the write of every message is bracketed (begun, done). */
export const COMMITS_TABLE = INGEST_COMMITS.name;

type AccountTable = (typeof ACCOUNT_TABLES)[number];

/** The tables a batch always carries rows for (maybe none); the rest only some batches fill. */
type AlwaysInBatch = 'identityLinks' | 'merges' | 'conflicts' | 'customers' | 'events';

/** Everything one processed batch writes for one account: rows per table, keyed by each table's `batch`. */
export type StoreBatch = {
  [T in AccountTable as BatchKeyOf<T> & AlwaysInBatch]: RowOf<T>[];
} & {
  [T in AccountTable as Exclude<BatchKeyOf<T>, AlwaysInBatch>]?: RowOf<T>[];
};

/** Account ids are generated as lower-case letters, digits and `_`; nothing else reaches SQL as a name. */
export function databaseName(account: string): string {
  if (!/^[a-z0-9_]{1,64}$/.test(account)) throw new Error(`not an account id: ${account}`);
  return `cdp_${account}`;
}

/**
 * The statements that create an account's database and tables, in ClickHouse SQL that chDB and a
 * ClickHouse server both run, or bring older ones up to date. `non_replicated_deduplication_window`
 * makes a MergeTree remember the last inserts' deduplication tokens, so re-sending the same insert
 * after a crash stores nothing twice.
 */
export function accountTables(db: string, layout: StoreLayout = SINGLE_NODE): string[] {
  return [
    `CREATE DATABASE IF NOT EXISTS ${db}${onCluster(layout)}`,
    ...ACCOUNT_TABLES.flatMap((table) => tableSql(db, table, layout)),
    // Where a customer's history belongs now: itself, unless it was merged (the latest merge names the survivor).
    `CREATE VIEW IF NOT EXISTS ${db}.customer_survivors${onCluster(layout)} AS
SELECT loser AS svc_id, argMax(survivor, seq) AS survivor FROM ${db}.identity_merges GROUP BY loser`,
  ];
}
