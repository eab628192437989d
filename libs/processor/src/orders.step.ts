import { Injectable } from '@nestjs/common';
import type { Delivery } from '@cdp/bus';
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
import type { EventRow, LineItemRow, OrderChangeRow, OrderRow, StoreBatch } from '@cdp/store';
import { OrdersRebuild } from './orders-rebuild.service.js';

interface HeldEvent {
  row: EventRow;
  action: OrderAction;
  /** The event's time in milliseconds. */
  ts: number;
  order: OrderData;
}

/**
 * Turns a batch's order events and order entity updates into order-state changes (spec "States and
 * transitions / Order actions"), and the outcomes into store rows: the recorded events, their line
 * items, the applied-change log and the orders' summaries.
 */
@Injectable()
export class OrdersStep {
  constructor(
    private readonly orders: OrderState,
    private readonly rebuild: OrdersRebuild,
  ) {}

  /** A collector for one account's batch. */
  begin(account: string): OrdersBatch {
    return new OrdersBatch(account, this);
  }

  /** Applies changes; an account the state does not hold is rebuilt from the store first. */
  async apply(account: string, changes: OrderChange[]): Promise<ApplyResult> {
    faultPoint(FAULT_POINTS.ordersApply);
    try {
      return await this.orders.apply(account, changes);
    } catch (err) {
      if (!(err instanceof OrdersNotWarmError)) throw err;
      if (!(await this.rebuild.rebuild(account))) throw err; // another processor is rebuilding: retry later
      return this.orders.apply(account, changes);
    }
  }
}

export class OrdersBatch {
  /** Order events by message id, in record order. */
  private readonly held = new Map<string, HeldEvent[]>();

  constructor(
    private readonly account: string,
    private readonly step: OrdersStep,
  ) {}

  /**
   * Takes an order event's row over (true): whether it is stored depends on the order's state. Any other
   * event is left to the caller (false).
   */
  take(row: EventRow, record: EventRecord): boolean {
    if (record.type !== 'order' || !isOrderAction(record.action) || !record.order) return false;
    const normalized = normalizeOrder(record.order);
    if ('invalid' in normalized) return false;
    const list = this.held.get(row.msg_id) ?? [];
    list.push({ row, action: record.action, ts: record.ts, order: normalized.order });
    this.held.set(row.msg_id, list);
    return true;
  }

  /** Applies the batch's order changes in delivery order and adds the resulting rows to the batch. */
  async finish(deliveries: readonly Delivery[], batch: StoreBatch, now: string): Promise<void> {
    const changes: { change: OrderChange; msgId: string; held?: HeldEvent }[] = [];
    for (const { message } of deliveries) {
      if (message.kind === 'events') {
        for (const held of this.held.get(message.id) ?? []) {
          const change = orderEventChange(
            held.row.event_id,
            held.action,
            held.ts,
            held.order,
            held.row.svc_id,
          );
          changes.push({ change, msgId: message.id, held });
        }
      } else if (message.kind === 'order-updates') {
        message.records.forEach((record, index) =>
          changes.push({
            change: orderUpdateChange(eventId(message.id, index), record, message.receivedAt),
            msgId: message.id,
          }),
        );
      }
    }
    if (changes.length === 0) return;
    const { outcomes, orders } = await this.step.apply(
      this.account,
      changes.map((c) => c.change),
    );
    const log: OrderChangeRow[] = (batch.orderChanges ??= []);
    const lineItems: LineItemRow[] = (batch.lineItems ??= []);
    const lastMessageOf = new Map<string, string>();
    changes.forEach(({ change, msgId, held }, i) => {
      const outcome = outcomes[i]!;
      if (outcome.seq === 0) return; // an update of an order that does not exist: nothing to do
      lastMessageOf.set(change.orderId, msgId);
      log.push({
        change_id: change.id,
        msg_id: msgId,
        order_id: change.orderId,
        seq: outcome.seq,
        kind: change.kind,
        action: change.action,
        ts_ms: change.ts,
        svc_id: change.customerId ?? null,
        subtotal: change.subtotal ?? null,
        total: change.total ?? null,
        fields: JSON.stringify(change.fields),
      });
      if (held && outcome.recorded) {
        batch.events.push(held.row);
        lineItems.push(...lineItemRows(held));
      }
    });
    const rows: OrderRow[] = (batch.orders ??= []);
    for (const state of orders) {
      const s = orderSummary(state);
      rows.push({
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
  }
}

/**
 * One line-item event per item (spec "Events": `Order Line Item Purchase`), referencing the item's
 * product. A return, refund or cancel lists what went back: its item subtotals are coerced negative, as
 * the order's are.
 */
function lineItemRows({ row, action, order }: HeldEvent): LineItemRow[] {
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
