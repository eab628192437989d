import type { FieldType } from './field-types.js';
import { parseTimestamp } from './timestamps.js';

/**
 * Orders (spec "Order fields" and "States and transitions / Order actions"). The rules here are pure:
 * the order-state drivers (memory, Redis) apply `applyOrderChange` or a line-for-line port of it.
 */

export const ORDER_ACTIONS = ['purchase', 'return', 'refund', 'cancel'] as const;
export type OrderAction = (typeof ORDER_ACTIONS)[number];

export function isOrderAction(action: string): action is OrderAction {
  return (ORDER_ACTIONS as readonly string[]).includes(action);
}

/** The order fields of the spec's order table (items apart), and their types. */
export const ORDER_FIELDS: Readonly<Record<string, FieldType>> = {
  order_id: 'string',
  ts: 'timestamp',
  total: 'number',
  subtotal: 'number',
  discount: 'number',
  shipping: 'number',
  tax: 'number',
  coupon_code: 'string',
  ship_address: 'string',
  bill_address: 'string',
  email: 'string',
  phone: 'string',
  name: 'string',
  first_name: 'string',
  last_name: 'string',
};

/** Fields of one order item (spec: product_id, price, quantity, discount, subtotal; bulk JSON adds sku). */
export const ORDER_ITEM_FIELDS: Readonly<Record<string, FieldType>> = {
  product_id: 'string',
  sku: 'string',
  price: 'number',
  quantity: 'number',
  discount: 'number',
  subtotal: 'number',
};

/** The running tally (spec rule 5): these move with events, every other field takes the last value. */
const TALLY_FIELDS = new Set(['subtotal', 'total']);
/** Order fields that take the value of the last event that included them (rule 5 and beyond). */
export const ORDER_VALUE_FIELDS = Object.keys(ORDER_FIELDS).filter(
  (f) => f !== 'order_id' && f !== 'ts' && !TALLY_FIELDS.has(f),
);

export type OrderValue = string | number | null;
export interface OrderItem {
  product_id?: string;
  sku?: string;
  price?: number;
  quantity?: number;
  discount?: number;
  subtotal?: number;
}

/** `data.order` of an event after normalization: known fields only, `ts` in milliseconds. */
export interface OrderData {
  order_id: string;
  ts?: number;
  fields: Record<string, OrderValue>;
  subtotal?: number;
  total?: number;
  items: OrderItem[];
}

/**
 * Normalizes a schema-valid `data.order`: fields the spec does not define are dropped (spec "Custom
 * objects and fields"), `ts` is read as a timestamp. Returns the names of dropped fields beside it, or
 * `{invalid}` naming the field that cannot be read.
 */
export function normalizeOrder(
  raw: Readonly<Record<string, unknown>>,
): { order: OrderData; dropped: string[] } | { invalid: string; reason: string } {
  const fields: Record<string, OrderValue> = {};
  const dropped: string[] = [];
  const order: OrderData = { order_id: String(raw.order_id), fields, items: [] };
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined || name === 'order_id') continue;
    if (name === 'items') {
      for (const item of (value ?? []) as Record<string, unknown>[]) order.items.push(normalizeItem(item));
    } else if (name === 'ts') {
      if (value === null) continue;
      const ms = parseTimestamp(value);
      if (ms === undefined)
        return { invalid: 'ts', reason: 'must be unix epoch seconds or an ISO 8601 date-time' };
      order.ts = ms;
    } else if (TALLY_FIELDS.has(name)) {
      if (typeof value === 'number') order[name as 'subtotal' | 'total'] = value;
    } else if (Object.hasOwn(ORDER_FIELDS, name)) {
      fields[name] = value === '' ? null : (value as OrderValue);
    } else {
      dropped.push(name);
    }
  }
  return { order, dropped };
}

function normalizeItem(raw: Readonly<Record<string, unknown>>): OrderItem {
  const item: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value !== null && value !== undefined && Object.hasOwn(ORDER_ITEM_FIELDS, name)) item[name] = value;
  }
  return item;
}

/**
 * The subtotal an order event carries: its own, or the sum of its items' subtotals when it gives none
 * (spec "Bulk file ingestion" rule 6, and "revenue is calculated from this field"). Undefined when
 * neither is there.
 */
export function orderSubtotal(order: Pick<OrderData, 'subtotal' | 'items'>): number | undefined {
  if (order.subtotal !== undefined) return order.subtotal;
  const subtotals = order.items.map((i) => i.subtotal).filter((s): s is number => typeof s === 'number');
  if (subtotals.length === 0) return undefined;
  return fromUnits(subtotals.reduce((sum, s) => sum + toUnits(s), 0));
}

/**
 * An order's running tally counts in integers of 1/10000, so that it stays exact over many events and the
 * Redis driver can add with HINCRBY: a built-in amount with more decimals (which the API accepts, spec
 * "Data types") counts in the tally rounded to 4 of them (README "API notes").
 */
export const AMOUNT_SCALE = 10_000;
export const toUnits = (amount: number): number => Math.round(amount * AMOUNT_SCALE);
export const fromUnits = (units: number): number => units / AMOUNT_SCALE;

/**
 * The largest amount: 15 digits of units, so that a running tally of many stays an exact integer in a
 * double (up to 2^53) and in the store's Int64 units.
 */
export const MAX_AMOUNT = 99_999_999_999.9999;

/** One input to an order's state: an order event, or a `POST /v2/entities` order update. */
export interface OrderChange {
  /** Event id or entity-update id: a change is applied at most once, however often it is delivered. */
  id: string;
  orderId: string;
  kind: 'event' | 'entity';
  /** The event's action; `update` for an entity update. */
  action: OrderAction | 'update';
  /** Milliseconds; decides which change was "the last event that included" a field (rule 5). */
  ts: number;
  /**
   * The change's place in the bus's acceptance order (`acceptanceOrder`; absent on changes stored before
   * it was kept): breaks a tie of `ts`, and decides whether an entity update came after the order existed.
   */
  at?: number;
  customerId?: string;
  /** Units (1/10000), sign as sent; return, refund and cancel are coerced negative when applied. */
  subtotal?: number;
  total?: number;
  /** Value fields the change carries; null unsets. */
  fields: Record<string, OrderValue>;
}

/** What the platform knows of one order. */
export interface OrderSnapshot {
  orderId: string;
  /** Number of changes applied; the version of the order's row in the store. */
  version: number;
  /** The customer of the kept purchase, or of the first change while no purchase was seen. */
  customerId: string | null;
  /** Id of the one purchase event that is kept (rule 1): the first accepted; null while none arrived. */
  purchaseEventId: string | null;
  purchaseTs: number | null;
  /**
   * The kept purchase's place in acceptance order and the amounts (units) it put in the tally, so that a
   * purchase accepted before it, processed after, takes its place. Absent on a purchase kept without `at`.
   */
  purchaseAt?: number;
  purchaseSubtotal?: number;
  purchaseTotal?: number;
  /** Purchase events that were kept until one accepted before them came: their rows leave the store. */
  displacedPurchases?: string[];
  /** Running tally in units (rule 5). */
  subtotal: number;
  total: number;
  /** Returns, refunds and cancels applied. */
  adjustments: number;
  cancelled: boolean;
  /** A cancel that named no amount: the whole order is void, its revenue zero. */
  cancelledInFull: boolean;
  /** Each field's value, the time of the change that set it, and that change's `at` when it had one. */
  fields: Record<string, OrderField>;
}

export interface OrderField {
  value: OrderValue;
  ts: number;
  at?: number;
}

export interface OrderChangeResult {
  /** The order after the change; undefined for an entity update of an order that does not exist. */
  state: OrderSnapshot | undefined;
  /** False when the change had been applied before (a redelivery) or its order does not exist. */
  applied: boolean;
  /** The version the change gave the order when it was (first) applied; 0 when never applied. */
  seq: number;
  /**
   * Whether the change is recorded as an event with line items: the kept purchase, and every return,
   * refund and cancel. A repeated purchase and an entity update are not (spec "Order actions").
   * Decided from the state, so a redelivered change gets the same answer.
   */
  recorded: boolean;
}

export function emptyOrder(orderId: string): OrderSnapshot {
  return {
    orderId,
    version: 0,
    customerId: null,
    purchaseEventId: null,
    purchaseTs: null,
    subtotal: 0,
    total: 0,
    adjustments: 0,
    cancelled: false,
    cancelledInFull: false,
    fields: {},
  };
}

const negative = (units: number): number => -Math.abs(units);

/**
 * Applies one change to an order's state (mutating `state`), the spec's order table row by row:
 * - purchase, no purchase kept yet: kept; its amounts start the tally (they add to whatever a return
 *   that arrived first put there, so the final tally does not depend on arrival order);
 * - purchase, one kept already: ignored for the tally and history, but its fields apply; unless it was
 *   accepted before the kept one (processed after it): then, as acceptance order has it, it is the one
 *   kept, the other's amounts leave the tally and the other is listed as displaced (its stored event and
 *   line items are deleted by the writer);
 * - return / refund: amounts coerced negative and added; every one counts (partial ones included);
 * - cancel: the same, and the order stops counting toward the lifecycle;
 * - entity update: fields only, and only for an order that exists.
 * `applied` holds the ids already applied with the version each gave.
 */
export function applyOrderChange(
  state: OrderSnapshot | undefined,
  applied: Map<string, number>,
  change: OrderChange,
): OrderChangeResult {
  if (change.kind === 'entity' && !state) return { state, applied: false, seq: 0, recorded: false };
  const order = state ?? emptyOrder(change.orderId);
  const recorded = (): boolean =>
    change.kind === 'event' && (change.action !== 'purchase' || order.purchaseEventId === change.id);
  const seen = applied.get(change.id);
  if (seen !== undefined) return { state: order, applied: false, seq: seen, recorded: recorded() };

  order.version += 1;
  applied.set(change.id, order.version);
  if (change.customerId && order.customerId === null) order.customerId = change.customerId;
  if (change.action === 'purchase') {
    if (order.purchaseEventId === null) keepPurchase(order, change);
    else if (acceptedBefore(change, order.purchaseAt)) {
      // The kept purchase was processed first but accepted later: in acceptance order it was the
      // second, ignored. Its amounts leave the tally, and the earlier one takes its place.
      order.subtotal -= order.purchaseSubtotal ?? 0;
      order.total -= order.purchaseTotal ?? 0;
      order.displacedPurchases = [...(order.displacedPurchases ?? []), order.purchaseEventId];
      keepPurchase(order, change);
    }
  } else if (change.action !== 'update') {
    order.adjustments += 1;
    order.subtotal += negative(change.subtotal ?? 0);
    order.total += negative(change.total ?? 0);
    if (change.action === 'cancel') {
      order.cancelled = true;
      if (change.subtotal === undefined && change.total === undefined) order.cancelledInFull = true;
    }
  }
  for (const [name, value] of Object.entries(change.fields)) {
    if (!fieldIsNewer(order.fields[name], change)) continue;
    order.fields[name] =
      change.at === undefined ? { value, ts: change.ts } : { value, ts: change.ts, at: change.at };
  }
  return { state: order, applied: true, seq: order.version, recorded: recorded() };
}

/** Keeps a purchase for the order (rule 1): its time, its customer, and its amounts in the tally. */
function keepPurchase(order: OrderSnapshot, change: OrderChange): void {
  order.purchaseEventId = change.id;
  order.purchaseTs = change.ts;
  if (change.customerId) order.customerId = change.customerId;
  order.subtotal += change.subtotal ?? 0;
  order.total += change.total ?? 0;
  if (change.at === undefined) delete order.purchaseAt;
  else order.purchaseAt = change.at;
  order.purchaseSubtotal = change.subtotal ?? 0;
  order.purchaseTotal = change.total ?? 0;
}

/** Whether a change was accepted before `at` (false when either is unknown: the kept one stays). */
function acceptedBefore(change: OrderChange, at: number | undefined): boolean {
  return change.at !== undefined && at !== undefined && change.at < at;
}

/**
 * "The last event that included them" (rule 5): by the change's time; a tie goes to the change accepted
 * later (`at`; a change without one counts as accepted before any that has one, and between two without,
 * the later applied wins), so the fields do not depend on the order processors apply changes in.
 */
function fieldIsNewer(current: OrderField | undefined, change: OrderChange): boolean {
  if (!current || change.ts !== current.ts) return !current || change.ts > current.ts;
  return (change.at ?? 0) >= (current.at ?? 0);
}

/**
 * Everything the state keeps of one order: its snapshot (undefined until a change of it applies), the ids
 * of the changes applied with the version each gave, the lowest `at` of its order events, and the entity
 * updates waiting for an order event accepted before them (by change id).
 */
export interface OrderEntry {
  state: OrderSnapshot | undefined;
  applied: Map<string, number>;
  firstEventAt?: number;
  pending: Map<string, OrderChange>;
}

export interface OrderEntryResult extends OrderChangeResult {
  /** An entity update kept until an order event accepted before it is applied (not applied yet). */
  pending: boolean;
}

/**
 * Applies one change as a single processor applying every change in acceptance order would: an entity
 * update applies only to an order one of whose events was accepted before it (spec "Order exists");
 * one processed before such an event (the event's batch retried, or on another processor) is kept
 * pending and applied as soon as that event is, rather than dropped. An update with no `at` keeps the
 * old rule: it applies to an order that exists, and is dropped otherwise. Mutates `entry`.
 */
export function applyOrderChangeInOrder(entry: OrderEntry, change: OrderChange): OrderEntryResult {
  if (change.kind === 'entity' && !entry.applied.has(change.id)) {
    if (entry.pending.has(change.id))
      return { state: entry.state, applied: false, seq: 0, recorded: false, pending: true };
    const at = change.at ?? 0;
    const due = entry.state !== undefined && (at === 0 || (entry.firstEventAt ?? 0) < at);
    if (!due) {
      if (at === 0) return { state: entry.state, applied: false, seq: 0, recorded: false, pending: false };
      entry.pending.set(change.id, change);
      return { state: entry.state, applied: false, seq: 0, recorded: false, pending: true };
    }
  }
  const result = applyOrderChange(entry.state, entry.applied, change);
  entry.state = result.state;
  if (result.applied && change.kind === 'event') {
    const at = change.at ?? 0;
    if (entry.firstEventAt === undefined || at < entry.firstEventAt) entry.firstEventAt = at;
    applyDueUpdates(entry);
  }
  return { ...result, pending: false };
}

/** Applies, in acceptance order, the pending updates accepted after the order's first event. */
function applyDueUpdates(entry: OrderEntry): void {
  const first = entry.firstEventAt ?? 0;
  const due = [...entry.pending.values()].filter((u) => (u.at ?? 0) > first).sort((a, b) => a.at! - b.at!);
  for (const update of due) {
    entry.pending.delete(update.id);
    entry.state = applyOrderChange(entry.state, entry.applied, update).state;
  }
}

/** The order as the store and exports show it. */
export interface OrderSummary {
  order_id: string;
  version: number;
  svc_id: string | null;
  purchased: boolean;
  /** Purchase time (ms), when the purchase was seen. */
  ts: number | null;
  subtotal: number;
  total: number;
  /** Revenue comes from the subtotal (spec "Order fields"); a cancel in full voids it. */
  revenue: number;
  /** A purchased order counts toward order count and lifecycle until it is cancelled. */
  counts_for_lifecycle: boolean;
  cancelled: boolean;
  /** Returned, refunded or cancelled in part: adjusted while the running subtotal stays above zero (rule 3). */
  partial: boolean;
  adjustments: number;
  fields: Record<string, string | number>;
}

export function orderSummary(state: OrderSnapshot): OrderSummary {
  const voided = state.cancelledInFull;
  const fields: Record<string, string | number> = {};
  for (const [name, { value }] of Object.entries(state.fields)) if (value !== null) fields[name] = value;
  return {
    order_id: state.orderId,
    version: state.version,
    svc_id: state.customerId,
    purchased: state.purchaseEventId !== null,
    ts: state.purchaseTs,
    subtotal: voided ? 0 : fromUnits(state.subtotal),
    total: voided ? 0 : fromUnits(state.total),
    revenue: voided ? 0 : fromUnits(state.subtotal),
    counts_for_lifecycle: state.purchaseEventId !== null && !state.cancelled,
    cancelled: state.cancelled,
    partial: state.adjustments > 0 && !voided && state.subtotal > 0,
    adjustments: state.adjustments,
    fields,
  };
}

/** The change an order event makes. `ts` is the order's own time when given, else the event's. */
export function orderEventChange(
  eventId: string,
  action: OrderAction,
  eventTs: number,
  order: OrderData,
  customerId: string,
): OrderChange {
  const subtotal = orderSubtotal(order);
  const change: OrderChange = {
    id: eventId,
    orderId: order.order_id,
    kind: 'event',
    action,
    ts: order.ts ?? eventTs,
    customerId,
    fields: { ...order.fields },
  };
  if (subtotal !== undefined) change.subtotal = toUnits(subtotal);
  if (order.total !== undefined) change.total = toUnits(order.total);
  return change;
}

/** The line-item event name of an order action (spec "Events": `Order Line Item Purchase`). */
export function lineItemEventName(action: OrderAction): string {
  return `Order Line Item ${action.charAt(0).toUpperCase()}${action.slice(1)}`;
}

/** A `POST /v2/entities` order update (or `POST /v3/objects/orders` record) as it travels to the processor. */
export interface OrderUpdateRecord {
  order_id: string;
  fields: Record<string, OrderValue>;
  dropped?: string[];
}

/**
 * An order entity update changes fields only (spec "Order actions": "Fields updated; no event is
 * produced"). The tally is a running sum of events, so `subtotal`, `total` and `items` are refused here
 * rather than silently ignored: returns the names of the refused fields, or the record.
 */
export function normalizeOrderUpdate(
  data: Readonly<Record<string, unknown>>,
): OrderUpdateRecord | { refused: string[] } {
  const refused = ['subtotal', 'total', 'items', 'ts'].filter(
    (f) => data[f] !== undefined && data[f] !== null,
  );
  if (refused.length) return { refused };
  const fields: Record<string, OrderValue> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(data)) {
    if (value === undefined || name === 'order_id' || refused.includes(name)) continue;
    if (Object.hasOwn(ORDER_FIELDS, name) && !TALLY_FIELDS.has(name) && name !== 'ts') {
      fields[name] = value === '' ? null : (value as OrderValue);
    } else if (value !== null) {
      dropped.push(name);
    }
  }
  const record: OrderUpdateRecord = { order_id: String(data.order_id), fields };
  if (dropped.length) record.dropped = dropped;
  return record;
}

export function orderUpdateChange(id: string, update: OrderUpdateRecord, receivedAt: number): OrderChange {
  return {
    id,
    orderId: update.order_id,
    kind: 'entity',
    action: 'update',
    ts: receivedAt,
    fields: { ...update.fields },
  };
}

/**
 * `data.order` as it is kept on the event row: the sent object without the fields the spec does not
 * define (on the order and on its items); the names of the dropped ones beside it, as `order.<name>`.
 */
export function keptOrder(raw: Readonly<Record<string, unknown>>): {
  order: Record<string, unknown>;
  dropped: string[];
} {
  const order: Record<string, unknown> = {};
  const dropped = new Set<string>();
  for (const [name, value] of Object.entries(raw)) {
    if (name === 'items' && Array.isArray(value)) {
      order.items = (value as Record<string, unknown>[]).map((item) => {
        const kept: Record<string, unknown> = {};
        for (const [f, v] of Object.entries(item)) {
          if (Object.hasOwn(ORDER_ITEM_FIELDS, f)) kept[f] = v;
          else dropped.add(`order.items.${f}`);
        }
        return kept;
      });
    } else if (Object.hasOwn(ORDER_FIELDS, name)) {
      order[name] = value;
    } else if (name !== 'items') {
      dropped.add(`order.${name}`);
    }
  }
  return { order, dropped: [...dropped] };
}
