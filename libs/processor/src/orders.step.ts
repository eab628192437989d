import { Injectable } from '@nestjs/common';
import { acceptanceOrder, ok, retry, type Delivery, type Step, type StepResult } from '@cdp/bus';
import {
  eventId,
  fromUnits,
  isOrderAction,
  lineItemEventName,
  normalizeOrder,
  orderEventChange,
  orderSummary,
  orderUpdateChange,
  toStoreTime,
  toUnits,
  type EventRecord,
  type OrderAction,
  type OrderChange,
  type OrderData,
} from '@cdp/domain';
import { FAULT_POINTS, faultPoint } from '@cdp/faults';
import { OrderState, OrdersNotWarmError, type ApplyResult } from '@cdp/orders';
import type { EventRow, LineItemRow, OrderChangeRow, OrderRow } from '@cdp/store';
import { OrdersRebuild } from './orders-rebuild.service.js';

/** An order event of the batch, with its row: whether the row is stored depends on the order's state. */
export interface OrderEvent {
  row: EventRow;
  action: OrderAction;
  /** The event's time in milliseconds. */
  ts: number;
  /** The record's place in the bus's acceptance order (`acceptanceOrder`). */
  at: number;
  order: OrderData;
}

export interface OrdersInput {
  account: string;
  /** The batch's deliveries of the account, in order: their order updates are applied in it. */
  deliveries: readonly Delivery[];
  /** The batch's order events (orderEventOf), in record order. */
  events: readonly OrderEvent[];
  /** Store time of this batch's writes. */
  now: string;
}

/** The rows an order batch writes: the order events recorded, their line items, the change log, the orders. */
export interface OrderRows {
  events?: EventRow[];
  lineItems?: LineItemRow[];
  orderChanges?: OrderChangeRow[];
  orders?: OrderRow[];
  /**
   * Purchase events stored as kept before a purchase of their order accepted earlier took their place:
   * the writer deletes them (and their line items) with this batch (StepWriter, `deleteEvents`).
   */
  displacedPurchases?: string[];
  /**
   * The purchases this batch stores as kept: another processor may displace one while this batch is being
   * written (an earlier-accepted purchase of its order arriving there), after that processor's delete ran
   * and before this insert; the writer asks again once its rows are in (`displacedAmong`).
   */
  keptPurchases?: KeptPurchase[];
}

/** A purchase event stored as its order's kept purchase. */
export interface KeptPurchase {
  orderId: string;
  eventId: string;
}

/**
 * An order event's row as the orders step takes it (its storing depends on the order's state);
 * undefined for any other event, which the caller stores itself.
 */
export function orderEventOf(row: EventRow, record: EventRecord, at: number): OrderEvent | undefined {
  if (record.type !== 'order' || !isOrderAction(record.action) || !record.order) return undefined;
  const normalized = normalizeOrder(record.order);
  if ('invalid' in normalized) return undefined;
  return { row, action: record.action, ts: record.ts, at, order: normalized.order };
}

/**
 * Turns a batch's order events and order entity updates into order-state changes (spec "States and
 * transitions / Order actions"), applied in delivery order, and the outcomes into store rows: the
 * recorded events, their line items, the applied-change log and the orders' summaries.
 */
@Injectable()
export class OrdersStep implements Step<OrdersInput, OrderRows> {
  constructor(
    private readonly orders: OrderState,
    private readonly rebuild: OrdersRebuild,
  ) {}

  /**
   * Those of `kept` their order's state no longer keeps: displaced, since this batch applied them, by a
   * purchase accepted earlier that another processor applied (and whose delete may have run before these
   * rows were stored). Read after the batch's rows are in, so one of the two deletes finds them.
   */
  async displacedAmong(account: string, kept: readonly KeptPurchase[]): Promise<string[]> {
    const states = await Promise.all(kept.map((k) => this.orders.get(account, k.orderId)));
    return kept.filter((k, i) => states[i]?.displacedPurchases?.includes(k.eventId)).map((k) => k.eventId);
  }

  async run({ account, deliveries, events, now }: OrdersInput): Promise<StepResult<OrderRows>> {
    const byMessage = new Map<string, OrderEvent[]>();
    for (const e of events) {
      const list = byMessage.get(e.row.msg_id) ?? [];
      list.push(e);
      byMessage.set(e.row.msg_id, list);
    }
    const changes: { change: OrderChange; msgId: string; held?: OrderEvent }[] = [];
    for (const delivery of deliveries) {
      const { message } = delivery;
      if (message.kind === 'events') {
        for (const held of byMessage.get(message.id) ?? []) {
          const change = orderEventChange(
            held.row.event_id,
            held.action,
            held.ts,
            held.order,
            held.row.svc_id,
          );
          change.at = held.at;
          changes.push({ change, msgId: message.id, held });
        }
      } else if (message.kind === 'order-updates') {
        message.records.forEach((record, index) => {
          const change = orderUpdateChange(eventId(message.id, index), record, message.receivedAt);
          change.at = acceptanceOrder(delivery, index);
          changes.push({ change, msgId: message.id });
        });
      }
    }
    if (changes.length === 0) return ok({});
    const applied = await this.apply(
      account,
      changes.map((c) => c.change),
    );
    if (!applied) return retry('the order state of the account is being rebuilt by another processor');
    const { outcomes, orders } = applied;
    const rows: Required<OrderRows> = {
      events: [],
      lineItems: [],
      orderChanges: [],
      orders: [],
      displacedPurchases: [],
      keptPurchases: [],
    };
    const stateOf = new Map(orders.map((o) => [o.orderId, o]));
    const lastMessageOf = new Map<string, string>();
    changes.forEach(({ change, msgId, held }, i) => {
      const outcome = outcomes[i]!;
      // A purchase stored as kept whose write crashed before it could see it was displaced meanwhile
      // (StepWriter's re-check): its redelivery is not kept any more, so nothing else would delete it.
      if (held && change.action === 'purchase' && !outcome.recorded) {
        if (stateOf.get(change.orderId)?.displacedPurchases?.includes(held.row.event_id))
          rows.displacedPurchases.push(held.row.event_id);
      }
      // An update of an order that does not exist, and never will before it: nothing to do. A pending one
      // is logged (seq 0) for a rebuild to keep pending; it changes no order yet.
      if (outcome.seq === 0 && !outcome.pending) return;
      if (!outcome.pending) lastMessageOf.set(change.orderId, msgId);
      rows.orderChanges.push({
        change_id: change.id,
        msg_id: msgId,
        order_id: change.orderId,
        seq: outcome.seq,
        kind: change.kind,
        action: change.action,
        ts_ms: change.ts,
        at: change.at ?? 0,
        svc_id: change.customerId ?? null,
        subtotal: change.subtotal ?? null,
        total: change.total ?? null,
        fields: JSON.stringify(change.fields),
      });
      if (held && outcome.recorded) {
        rows.events.push(held.row);
        rows.lineItems.push(...lineItemRows(held));
        // The kept purchase, redelivered or not: the purchases it displaced leave the store with it.
        if (change.action === 'purchase') {
          rows.displacedPurchases.push(...(stateOf.get(change.orderId)?.displacedPurchases ?? []));
          rows.keptPurchases.push({ orderId: change.orderId, eventId: held.row.event_id });
        }
      }
    });
    for (const state of orders) {
      const s = orderSummary(state);
      rows.orders.push({
        order_id: s.order_id,
        version: s.version,
        msg_id: lastMessageOf.get(s.order_id)!,
        updated_at: now,
        svc_id: s.svc_id,
        purchased: s.purchased,
        ts: s.ts === null ? null : toStoreTime(s.ts),
        subtotal: s.subtotal,
        total: s.total,
        revenue: s.revenue,
        counts_for_lifecycle: s.counts_for_lifecycle,
        cancelled: s.cancelled,
        partial: s.partial,
        adjustments: s.adjustments,
        fields: s.fields,
      });
    }
    return ok(rows);
  }

  /**
   * Applies changes; an account the state does not hold is rebuilt from the store first (undefined:
   * another processor is rebuilding it, try again later).
   */
  private async apply(account: string, changes: OrderChange[]): Promise<ApplyResult | undefined> {
    faultPoint(FAULT_POINTS.ordersApply);
    try {
      return await this.orders.apply(account, changes);
    } catch (err) {
      if (!(err instanceof OrdersNotWarmError)) throw err;
      if (!(await this.rebuild.rebuild(account))) return undefined;
      return this.orders.apply(account, changes);
    }
  }
}

/**
 * One line-item event per item (spec "Events": `Order Line Item Purchase`), referencing the item's
 * product. A return, refund or cancel lists what went back: its item subtotals are coerced negative, as
 * the order's are.
 */
function lineItemRows({ row, action, order }: OrderEvent): LineItemRow[] {
  const sign = action === 'purchase' ? (x: number) => x : (x: number) => -Math.abs(x);
  return order.items.map((item, i) => ({
    line_item_id: `${row.event_id}-${i}`,
    event_id: row.event_id,
    msg_id: row.msg_id,
    order_id: order.order_id,
    svc_id: row.svc_id,
    ts: row.ts,
    event: lineItemEventName(action),
    action,
    product_id: item.product_id ?? null,
    sku: item.sku ?? null,
    price: item.price ?? null,
    quantity: item.quantity ?? null,
    discount: item.discount ?? null,
    subtotal: item.subtotal === undefined ? null : fromUnits(sign(toUnits(item.subtotal))),
  }));
}
