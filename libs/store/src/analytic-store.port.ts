import type { DriverHealth } from '@cdp/contracts';

/** A link from an identifier to the customer it identifies; written once, when first seen. */
export interface IdentityLinkRow {
  kind: string;
  value: string;
  svc_id: string;
  msg_id: string;
  created_at: string;
}

/** The full state of a profile after an update; the highest version of a customer is current. */
export interface CustomerRow {
  svc_id: string;
  version: number;
  msg_id: string;
  updated_at: string;
  attributes: Record<string, string | boolean>;
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
  fields: Record<string, string | number>;
}

/** Everything one processed batch writes for one account. */
export interface StoreBatch {
  identityLinks: IdentityLinkRow[];
  customers: CustomerRow[];
  events: EventRow[];
  orderChanges?: OrderChangeRow[];
  lineItems?: LineItemRow[];
  orders?: OrderRow[];
  products?: ProductRow[];
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
  abstract identityLinks(account: string): AsyncIterable<{ kind: string; value: string; svc_id: string }>;
  abstract currentProfiles(
    account: string,
  ): AsyncIterable<{ svc_id: string; version: number; attributes: Record<string, string | boolean> }>;
  /** Every applied order change, each order's in the order they were applied: what the order state is rebuilt from. */
  abstract orderChanges(account: string): AsyncIterable<OrderChangeRow>;
  /** The current rows of the products named (for additive updates). */
  abstract products(account: string, productIds: string[]): Promise<ProductRow[]>;
  /** Runs a select in the account's database: `{db}` in the SQL names it. */
  abstract query<T>(account: string, sql: string, params?: Record<string, unknown>): Promise<T[]>;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
