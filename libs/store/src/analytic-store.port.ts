import type { DriverHealth } from '@cdp/contracts';
import type { ColumnSpec } from './custom-columns.sql.js';

/** A link from an identifier to the customer it identifies; written once, when first seen. */
export interface IdentityLinkRow {
  kind: string;
  value: string;
  svc_id: string;
  /** The customer's born key (identity resolution.ts): how customers compare by age after a rebuild. */
  born: string;
  msg_id: string;
  created_at: string;
}

/** A merge: from now on the loser's history belongs to the survivor (spec "What the service does"). */
export interface MergeRow {
  loser: string;
  survivor: string;
  /** The account's merge counter: for a loser merged twice, the higher seq names its survivor. */
  seq: number;
  /** The identifiers of the record that caused it, as `kind:value`. */
  cause: string[];
  msg_id: string;
  created_at: string;
}

/** Customers a record touched but could not merge (different customer_id values, or the merge limit). */
export interface ConflictRow {
  svc_id: string;
  other_svc_id: string;
  reason: string;
  cause: string[];
  msg_id: string;
  created_at: string;
}

/** The full state of a profile after an update; the highest version of a customer is current. */
export interface CustomerRow {
  svc_id: string;
  version: number;
  msg_id: string;
  updated_at: string;
  /** Set on a merged customer's last snapshot: the survivor that holds its profile now. */
  merged_into: string | null;
  /** Set on the snapshots of a redacted profile (spec "Compliance opt-out"). */
  redacted?: boolean;
  attributes: Record<string, string | boolean | number>;
}

/** The audit of one compliance opt-out: who asked, when, through which key, and what it reached. */
export interface OptOutRequestRow {
  /** The request id. */
  msg_id: string;
  requester: string;
  /** `private:<key id>`. */
  api_key: string;
  requested_at: string;
  processed_at: string;
  /** The identifiers sent, `kind:value`. */
  sent: string[];
  /** The phone sent, if any (matched exactly against profiles; not an identifier). */
  phone: string | null;
  /** The customers redacted. */
  customers: string[];
  /** Every identifier added to the opt-out pool, `kind:value`. */
  identifiers: string[];
}

/** An identifier in the opt-out pool. */
export interface OptOutPoolRow {
  kind: string;
  value: string;
  msg_id: string;
  created_at: string;
}

export interface EventRow {
  event_id: string;
  msg_id: string;
  svc_id: string;
  ts: string;
  received_at: string;
  type: string;
  action: string;
  channel: string;
  identifiers: Record<string, string>;
  data: Record<string, string | number | boolean>;
  order: string | null;
}

/**
 * One change of a customer's consent (a list membership, or `svc_all` for global opt-in): who, what,
 * when, and through which key. The history is kept whole; the hot consent state is rebuilt from it.
 */
export interface ConsentHistoryRow {
  svc_id: string;
  list_id: string;
  subscribed: boolean;
  /** The customer's consent version after this change (orders replays). */
  version: number;
  /** The identifier the change was sent with. */
  identifier_kind: string;
  identifier_value: string;
  /** `public`, or `private:<key id>`. */
  api_key: string;
  /** Where the change came from: `subscriptions` (POST /v3/lists/subscriptions). */
  source: string;
  msg_id: string;
  /** When the API accepted the request. */
  changed_at: string;
  stored_at: string;
}

/**
 * One change applied to an order, in the order the state applied it (`seq`): the log the order state
 * is rebuilt from. Amounts in 1/10000 units as sent; `fields` is the JSON of the value fields.
 */
export interface OrderChangeRow {
  change_id: string;
  msg_id: string;
  order_id: string;
  seq: number;
  kind: 'event' | 'entity';
  action: string;
  ts_ms: number;
  svc_id: string | null;
  subtotal: number | null;
  total: number | null;
  fields: string;
}

/** An order's summary after a batch; the highest version of an order is current (ReplacingMergeTree). */
export interface OrderRow {
  order_id: string;
  version: number;
  msg_id: string;
  updated_at: string;
  svc_id: string | null;
  purchased: boolean;
  ts: string | null;
  subtotal: number;
  total: number;
  revenue: number;
  counts_for_lifecycle: boolean;
  cancelled: boolean;
  partial: boolean;
  adjustments: number;
  fields: Record<string, string | number>;
}

/** One line-item event (`Order Line Item Purchase`, ...) of an order event. */
export interface LineItemRow {
  line_item_id: string;
  event_id: string;
  msg_id: string;
  order_id: string;
  svc_id: string;
  ts: string;
  event: string;
  action: string;
  product_id: string | null;
  sku: string | null;
  price: number | null;
  quantity: number | null;
  discount: number | null;
  subtotal: number | null;
}

/** A product after an update; no history is kept: the highest version of a product is current. */
export interface ProductRow {
  product_id: string;
  version: number;
  msg_id: string;
  updated_at: string;
  /** The spec's fields and the account's custom product fields (their columns), in the store's form. */
  fields: Record<string, string | number | boolean>;
}

/** One change of an identifier's state (`POST /v3/consent`, `/v3/reachability`, `/v3/identifiers`). */
export interface IdentifierUpdateRow {
  field: string;
  value: string;
  /** The identifier's version after this change (rebuilds replay in this order). */
  version: number;
  type: string;
  /** The change without field and value, as JSON (IdentifierState's `changeBody`). */
  change: string;
  /** The customer the identifier resolved to. */
  svc_id: string;
  /** `public`, or `private:<key id>`. */
  api_key: string;
  msg_id: string;
  /** The sender's update time, or when the API accepted the request. */
  changed_at: string;
  stored_at: string;
}

/** Everything one processed batch writes for one account. */
export interface StoreBatch {
  identityLinks: IdentityLinkRow[];
  merges: MergeRow[];
  conflicts: ConflictRow[];
  customers: CustomerRow[];
  events: EventRow[];
  consentHistory?: ConsentHistoryRow[];
  identifierUpdates?: IdentifierUpdateRow[];
  orderChanges?: OrderChangeRow[];
  lineItems?: LineItemRow[];
  orders?: OrderRow[];
  products?: ProductRow[];
  optoutRequests?: OptOutRequestRow[];
  optoutPool?: OptOutPoolRow[];
}

/**
 * The analytic history of every account (one database each). Writes are idempotent per message:
 * a redelivered message's rows are never stored twice.
 */
export abstract class AnalyticStore {
  /** Creates the account's database and tables if they are missing. */
  abstract ensureAccount(account: string): Promise<void>;
  /**
   * Appends a batch. With `redelivery` set, rows of messages the store already holds are skipped, so
   * a batch that was stored before a crash but never acknowledged is not stored twice.
   */
  abstract write(account: string, batch: StoreBatch, redelivery: boolean): Promise<void>;
  /**
   * Crash consistency (README "Durability"): a processor brackets every write of a batch's messages
   * with `begin` (before the first) and `commit` (after the last). A message begun and not committed
   * was cut short by a crash, somewhere between two inserts in whatever order they ran: every read a
   * rebuild makes (identity graph, profiles, memberships, order changes, opt-out pool) leaves its rows
   * out, so the rebuilt state is that of the committed messages exactly, and the message's redelivery
   * resolves as it did the first time and completes every table. Rows written outside a bracket
   * (older data) always count. One exception, profiles (`currentProfiles`): the engine may fold a
   * customer's snapshots into an unfinished message's newer one, so a customer the committed messages
   * know is rebuilt from its newest snapshot, unfinished or not (the redelivery applies the same
   * changes again, to the same result).
   */
  abstract begin(account: string, messages: readonly string[]): Promise<void>;
  /** The last write of these messages: from now on rebuilds count their rows. */
  abstract commit(account: string, messages: readonly string[]): Promise<void>;
  /** Messages begun and not committed: their rows are left out of every rebuild. */
  abstract unfinishedMessages(account: string): Promise<string[]>;
  /** What the identity index is rebuilt from: every identifier's first link, then the merges in order. */
  abstract identityGraph(account: string): {
    links: AsyncIterable<{ kind: string; value: string; svc_id: string; born: string }>;
    merges: AsyncIterable<{ loser: string; survivor: string; seq: number }>;
  };
  abstract currentProfiles(account: string): AsyncIterable<{
    svc_id: string;
    version: number;
    attributes: Record<string, string | boolean | number>;
    redacted?: boolean;
  }>;
  /** Adds the columns of custom fields to a built-in table (`events`, `customers`, …) unless present. */
  abstract addColumns(account: string, table: string, columns: readonly ColumnSpec[]): Promise<void>;
  /** Creates an account object's table, or adds the columns of its newer fields. */
  abstract ensureObjectTable(account: string, table: string, columns: readonly ColumnSpec[]): Promise<void>;
  /**
   * Upserts records of an account object (each with `_msg_id` and `_updated_at`); a record changes the
   * fields it carries. With `redelivery`, records of messages already stored are skipped.
   */
  abstract writeObjects(
    account: string,
    table: string,
    rows: readonly ({ _msg_id: string } & Record<string, unknown>)[],
    redelivery: boolean,
  ): Promise<void>;
  /** The latest membership of every customer and list (`svc_all` included), from the consent history. */
  abstract consentStates(
    account: string,
  ): AsyncIterable<{ svc_id: string; list_id: string; subscribed: boolean; version: number }>;
  /** Every stored identifier change, by identifier and version: what the identifier state is rebuilt from. */
  abstract identifierUpdates(
    account: string,
  ): AsyncIterable<{ field: string; value: string; version: number; change: string }>;
  /** Every applied order change, each order's in the order they were applied: what the order state is rebuilt from. */
  abstract orderChanges(account: string): AsyncIterable<OrderChangeRow>;
  /** The current rows of the products named (for additive updates). */
  abstract products(account: string, productIds: string[]): Promise<ProductRow[]>;
  /**
   * Removes the personal data of these customers, and of the customers merged into them, from every
   * profile snapshot the store holds (`opted_in` and the bookkeeping columns stay); marks them redacted.
   * Returns once the rows are rewritten.
   */
  abstract redactCustomers(account: string, customerIds: readonly string[]): Promise<void>;
  /** Every identifier of the opt-out pool: what the hot pool is rebuilt from. */
  abstract optOutPool(account: string): AsyncIterable<{ kind: string; value: string }>;
  /** Runs a statement that returns nothing (DDL, `INSERT … SELECT`) in the account's database (`{db}`). */
  abstract execute(account: string, sql: string): Promise<void>;
  /** Runs a select in the account's database: `{db}` in the SQL names it. */
  abstract query<T>(account: string, sql: string, params?: Record<string, unknown>): Promise<T[]>;
  /**
   * Writes a select in the account's database (`{db}` names it) as one Parquet file at a local path,
   * streamed to disk: how exports read the store without holding the rows in memory.
   */
  abstract writeParquet(
    account: string,
    sql: string,
    params: Record<string, unknown>,
    path: string,
  ): Promise<void>;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
