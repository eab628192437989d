import { eventId, toStoreTime, type EventRecord } from '@cdp/domain';
import type { Delivery } from '@cdp/bus';
import type { IngestMessage } from '@cdp/contracts';
import type { ClickHouseStore, EventRow } from '@cdp/store';
import { orderEventOf, type OrderEvent } from './orders.step.js';
import { MemoryOrderState } from '@cdp/orders/memory';
import { emptyBatch } from './store-rows.js';
import { newProcessor, deliveryOf, okValue, tempChdbStore } from './testing/processor-harness.js';

const NOW = '2026-11-22 10:00:00.000';
const T0 = Date.parse('2026-11-22T09:00:00Z');

/** The order events of one message, as the pipeline has them: each record and its event row. */
function orderEvents(
  id: string,
  account: string,
  records: { action: string; order: Record<string, unknown>; ts: number }[],
  busSequence = 1,
) {
  const message = {
    id,
    account,
    kind: 'events',
    receivedAt: T0,
    records: records.map((r): EventRecord => ({
      type: 'order',
      action: r.action,
      ts: r.ts,
      channel: 'offline',
      identifiers: { email: 'ann@x.com' },
      data: {},
      order: r.order,
    })),
  } as IngestMessage & { records: EventRecord[] };
  const rows = message.records.map((record, index): EventRow => ({
    event_id: eventId(id, index),
    msg_id: id,
    svc_id: 'cust-ann',
    ts: toStoreTime(record.ts),
    received_at: toStoreTime(T0),
    type: record.type,
    action: record.action,
    channel: record.channel,
    identifiers: { email: 'ann@x.com' },
    data: {},
    order: JSON.stringify(record.order),
  }));
  return { delivery: deliveryOf(message, 1, busSequence), message, rows };
}

/** OrdersStep on the memory order state, its rows written to chDB and read back. */
describe('OrdersStep', () => {
  let store: ClickHouseStore;
  beforeAll(() => {
    store = tempChdbStore('orders-step');
  });
  afterAll(() => store.close());
  let n = 0;

  it('records the first purchase with its line items, keeps a second purchase out, and tallies a return', async () => {
    const account = `orders${++n}`;
    const { ordersStep } = await newProcessor(store);
    const purchase = {
      order_id: 'o1',
      subtotal: 100,
      total: 110,
      items: [
        { product_id: 'p1', quantity: 1, price: 60, subtotal: 60 },
        { product_id: 'p2', quantity: 2, price: 20, subtotal: 40 },
      ],
    };
    const first = orderEvents('m1', account, [
      { action: 'purchase', order: purchase, ts: T0 },
      { action: 'purchase', order: { ...purchase, subtotal: 999 }, ts: T0 + 1000 },
    ]);
    // Order events are the step's; any other event stays with the caller.
    const events = first.message.records.map((r, i) => orderEventOf(first.rows[i]!, r, 1000 + i));
    events.forEach((e) => expect(e).toBeDefined());
    expect(
      orderEventOf(
        { ...first.rows[0]!, type: 'pageview' },
        { ...first.message.records[0]!, type: 'pageview' },
        1000,
      ),
    ).toBeUndefined();
    const batch = okValue(
      await ordersStep.run({
        account,
        deliveries: [first.delivery],
        events: events as OrderEvent[],
        now: NOW,
      }),
    );
    // Rule 1: only the first purchase is recorded; both changes are in the log.
    expect(batch.events!.map((e) => e.event_id)).toEqual([eventId('m1', 0)]);
    expect(batch.lineItems!.map((l) => [l.product_id, l.subtotal, l.event])).toEqual([
      ['p1', 60, 'Order Line Item Purchase'],
      ['p2', 40, 'Order Line Item Purchase'],
    ]);
    expect(batch.orderChanges!.map((c) => [c.change_id, c.action, c.seq])).toEqual([
      [eventId('m1', 0), 'purchase', 1],
      [eventId('m1', 1), 'purchase', 2],
    ]);
    expect(batch.orders).toEqual([
      expect.objectContaining({ order_id: 'o1', msg_id: 'm1', purchased: true, subtotal: 100, revenue: 100 }),
    ]);

    // A later batch returns one item: recorded, its line item negative, the tally down.
    const second = orderEvents('m2', account, [
      {
        action: 'return',
        order: { order_id: 'o1', subtotal: 40, items: [{ product_id: 'p2', subtotal: 40 }] },
        ts: T0 + 2000,
      },
    ]);
    const returned = orderEventOf(second.rows[0]!, second.message.records[0]!, 1000);
    expect(returned).toBeDefined();
    const next = okValue(
      await ordersStep.run({ account, deliveries: [second.delivery], events: [returned!], now: NOW }),
    );
    expect(next.events!.map((e) => e.event_id)).toEqual([eventId('m2', 0)]);
    expect(next.lineItems!.map((l) => [l.product_id, l.subtotal, l.event])).toEqual([
      ['p2', -40, 'Order Line Item Return'],
    ]);
    expect(next.orders).toEqual([expect.objectContaining({ order_id: 'o1', msg_id: 'm2', revenue: 60 })]);

    // The rows are what the store takes.
    await store.write(account, { ...emptyBatch(), ...batch }, false);
    await store.write(account, { ...emptyBatch(), ...next }, false);
    const stored = await store.query<{ order_id: string; revenue: number; purchased: boolean }>(
      account,
      'SELECT order_id, revenue, purchased FROM {db}.orders FINAL',
    );
    expect(stored.map((r) => [r.order_id, Number(r.revenue), r.purchased])).toEqual([['o1', 60, true]]);
    const items = await store.query<{ n: number | string }>(
      account,
      'SELECT count() AS n FROM {db}.line_items',
    );
    expect(Number(items[0]!.n)).toBe(3);
  });

  /** An order-updates message setting `fields` on `orderId`, accepted `busSequence`-th. */
  const updateOf = (
    account: string,
    id: string,
    orderId: string,
    busSequence: number,
    fields: Record<string, string> = { coupon_code: 'LATE' },
  ) =>
    deliveryOf(
      {
        id,
        account,
        kind: 'order-updates',
        receivedAt: T0 + 5000,
        records: [{ order_id: orderId, fields }],
      },
      1,
      busSequence,
    );
  const heldOf = (events: ReturnType<typeof orderEvents>) =>
    events.message.records.map((r, i) =>
      orderEventOf(events.rows[i]!, r, events.delivery.sequence * 1000 + i)!,
    );

  it('applies an order update only to an order that exists, and a redelivered change moves nothing', async () => {
    const account = `orders${++n}`;
    const { ordersStep } = await newProcessor(store);
    // An order no event made: the update changes nothing, and is logged pending (seq 0) in case an
    // event of its order accepted before it is still to be processed.
    const nothing = okValue(
      await ordersStep.run({
        account,
        deliveries: [updateOf(account, 'u0', 'ghost', 1)],
        events: [],
        now: NOW,
      }),
    );
    expect(nothing.orderChanges!.map((c) => [c.change_id, c.seq])).toEqual([[eventId('u0', 0), 0]]);
    expect(nothing.orders ?? []).toEqual([]);

    const bought = orderEvents(
      'b1',
      account,
      [{ action: 'purchase', order: { order_id: 'o2', subtotal: 10 }, ts: T0 }],
      2,
    );
    const batch = okValue(
      await ordersStep.run({
        account,
        deliveries: [bought.delivery, updateOf(account, 'u1', 'o2', 3)],
        events: heldOf(bought),
        now: NOW,
      }),
    );
    expect(batch.orderChanges!.map((c) => [c.kind, c.seq])).toEqual([
      ['event', 1],
      ['entity', 2],
    ]);
    expect(batch.orders).toEqual([
      expect.objectContaining({
        order_id: 'o2',
        msg_id: 'u1',
        fields: expect.objectContaining({ coupon_code: 'LATE' }),
      }),
    ]);

    // The same messages again (a redelivery): the same sequence numbers, the order unchanged.
    const again = okValue(
      await ordersStep.run({
        account,
        deliveries: [bought.delivery, updateOf(account, 'u1', 'o2', 3)],
        events: heldOf(bought),
        now: NOW,
      }),
    );
    expect(again.orderChanges!.map((c) => [c.kind, c.seq])).toEqual([
      ['event', 1],
      ['entity', 2],
    ]);
    expect(again.events!.map((e) => e.event_id)).toEqual([eventId('b1', 0)]);
  });

  it('applies an update processed before the purchase accepted ahead of it, as acceptance order would, also after a rebuild', async () => {
    const account = `orders${++n}`;
    const { ordersStep, orders } = await newProcessor(store);
    const purchase = orderEvents(
      'p1',
      account,
      [{ action: 'purchase', order: { order_id: 'o3', subtotal: 10, coupon_code: 'FIRST' }, ts: T0 }],
      10,
    );
    const run = async (
      deliveries: Parameters<typeof ordersStep.run>[0]['deliveries'],
      events: OrderEvent[],
    ) => {
      const rows = okValue(await ordersStep.run({ account, deliveries, events, now: NOW }));
      await store.write(account, { ...emptyBatch(), ...rows }, false);
      return rows;
    };
    // The purchase (accepted 10th) failed its first store write; the update accepted after it (11th) is
    // processed first: kept pending, no order yet.
    const early = await run(
      [updateOf(account, 'u-after', 'o3', 11, { coupon_code: 'LATE', bill_address: 'B' })],
      [],
    );
    expect(early.orderChanges!.map((c) => [c.change_id, c.seq])).toEqual([[eventId('u-after', 0), 0]]);
    expect(await orders.get(account, 'o3')).toBeUndefined();
    // An update accepted before the purchase (9th) finds no order in acceptance order: it never applies,
    // even though it is processed after the purchase here.
    const bought = await run(
      [purchase.delivery, updateOf(account, 'u-before', 'o3', 9, { ship_address: 'EARLY' })],
      heldOf(purchase),
    );
    expect(bought.orders).toEqual([
      expect.objectContaining({
        order_id: 'o3',
        version: 2,
        purchased: true,
        fields: { coupon_code: 'LATE', bill_address: 'B' },
      }),
    ]);
    const before = await orders.get(account, 'o3');

    // A rebuild from the store's log ends the same, and keeps the too-early update out.
    const fresh = await newProcessor(store);
    expect(await fresh.ordersRebuild.rebuild(account)).toBe(true);
    expect(await fresh.orders.get(account, 'o3')).toEqual(before);
  });

  it('keeps a pending update of an order with no summary yet across two rebuilds bounded by the retention', async () => {
    const account = `orders${++n}`;
    // A state that forgets orders 30 days after their last change: its rebuild reads only recent orders.
    const restart = () => newProcessor(store, { orders: new MemoryOrderState(30 * 86_400_000) });
    let processor = await restart();
    // Written as the pipeline writes (StepWriter): bracketed in the commit log.
    const write = async (deliveries: Delivery[], events: OrderEvent[]) => {
      const rows = okValue(await processor.ordersStep.run({ account, deliveries, events, now: NOW }));
      const messages = deliveries.map((d) => d.message.id);
      await store.begin(account, messages);
      await store.write(account, { ...emptyBatch(), ...rows }, false);
      await store.commit(account, messages);
      return rows;
    };
    // The update accepted 21st is processed before the purchase accepted 20th: pending, no order summary.
    const early = await write([updateOf(account, 'u-wait', 'o4', 21, { coupon_code: 'KEPT' })], []);
    expect(early.orders ?? []).toEqual([]);
    // Two restarts, each rebuilding the order state from the store.
    for (let restarts = 0; restarts < 2; restarts++) {
      processor = await restart();
      expect(await processor.ordersRebuild.rebuild(account)).toBe(true);
    }
    const purchase = orderEvents(
      'p4',
      account,
      [{ action: 'purchase', order: { order_id: 'o4', subtotal: 5 }, ts: T0 }],
      20,
    );
    const bought = await write([purchase.delivery], heldOf(purchase));
    expect(bought.orders).toEqual([
      expect.objectContaining({
        order_id: 'o4',
        version: 2,
        purchased: true,
        fields: { coupon_code: 'KEPT' },
      }),
    ]);
  });
});
