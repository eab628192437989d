import { orderSummary, toUnits, type OrderChange, type OrderValue } from '@cdp/domain';
import type { OrderState } from './order-state.port.js';

/** Account names unique to this run, since a shared Redis outlives it. */
const run = Math.random().toString(36).slice(2, 8);
export const ORDER_CONTRACT_ACCOUNTS = ['ord', 'oth'].map((a) => `${a}${run}`);
const [acc, other] = ORDER_CONTRACT_ACCOUNTS as [string, string];

let seq = 0;
/** An order event change; amounts in currency, fields as sent. */
function event(
  action: OrderChange['action'],
  orderId: string,
  opts: {
    id?: string;
    ts?: number;
    subtotal?: number;
    total?: number;
    fields?: Record<string, OrderValue>;
    customer?: string;
    at?: number;
  } = {},
): OrderChange {
  const change: OrderChange = {
    id: opts.id ?? `e${++seq}`,
    orderId,
    kind: 'event',
    action,
    ts: opts.ts ?? 1_000,
    customerId: opts.customer ?? 'c1',
    fields: opts.fields ?? {},
  };
  if (opts.subtotal !== undefined) change.subtotal = toUnits(opts.subtotal);
  if (opts.total !== undefined) change.total = toUnits(opts.total);
  if (opts.at !== undefined) change.at = opts.at;
  return change;
}
const update = (
  orderId: string,
  fields: Record<string, OrderValue>,
  ts = 5_000,
  at?: number,
): OrderChange => ({
  id: `u${++seq}`,
  orderId,
  kind: 'entity',
  action: 'update',
  ts,
  ...(at === undefined ? {} : { at }),
  fields,
});

/**
 * What every order-state driver owes the processor: the spec's order table ("States and transitions /
 * Order actions") row by row, its rules, arrival out of order and redelivery.
 */
export function orderStateContract(name: string, open: () => Promise<OrderState>): void {
  describe(`OrderState contract: ${name}`, () => {
    let state: OrderState;
    beforeAll(async () => {
      state = await open();
    });
    afterAll(() => state.close());
    const summary = async (orderId: string, account = acc) => {
      const s = await state.get(account, orderId);
      if (!s) throw new Error(`no order ${orderId}`);
      return orderSummary(s);
    };
    const id = (label: string) => `${label}-${run}`;

    it('row 1: no order + purchase: the order is created, the purchase recorded, the tally started', async () => {
      const o = id('r1');
      const { outcomes, orders } = await state.apply(acc, [
        event('purchase', o, { id: 'p1', subtotal: 100, total: 110, fields: { coupon_code: 'WELCOME' } }),
      ]);
      expect(outcomes).toEqual([{ applied: true, seq: 1, recorded: true }]);
      expect(orders).toHaveLength(1);
      expect(orderSummary(orders[0]!)).toMatchObject({
        order_id: o,
        version: 1,
        svc_id: 'c1',
        purchased: true,
        ts: 1_000,
        subtotal: 100,
        total: 110,
        revenue: 100,
        counts_for_lifecycle: true,
        cancelled: false,
        partial: false,
        fields: { coupon_code: 'WELCOME' },
      });
    });

    it('row 2: a second purchase is not recorded and leaves the tally, but its fields apply', async () => {
      const o = id('r2');
      await state.apply(acc, [
        event('purchase', o, { subtotal: 50, total: 55, fields: { ship_address: 'A' } }),
      ]);
      const { outcomes } = await state.apply(acc, [
        event('purchase', o, {
          ts: 2_000,
          subtotal: 999,
          total: 999,
          customer: 'c2',
          fields: { ship_address: 'B', bill_address: 'C' },
        }),
      ]);
      expect(outcomes).toEqual([{ applied: true, seq: 2, recorded: false }]);
      expect(await summary(o)).toMatchObject({
        svc_id: 'c1',
        subtotal: 50,
        total: 55,
        version: 2,
        fields: { ship_address: 'B', bill_address: 'C' },
      });
    });

    it.each(['return', 'refund'] as const)(
      'row 3 (%s): amounts coerced negative and added; repeated partial ones all count; still a lifecycle order',
      async (action) => {
        const o = id(`r3${action}`);
        await state.apply(acc, [event('purchase', o, { subtotal: 100, total: 120 })]);
        const { outcomes } = await state.apply(acc, [
          event(action, o, { subtotal: 20, total: 24 }),
          event(action, o, { subtotal: -30, total: -36 }), // already negative: kept negative
        ]);
        expect(outcomes.map((r) => r.recorded)).toEqual([true, true]);
        expect(await summary(o)).toMatchObject({
          subtotal: 50,
          total: 60,
          revenue: 50,
          counts_for_lifecycle: true,
          partial: true, // rule 3: running subtotal still above zero
          adjustments: 2,
        });
      },
    );

    it('rule 3: the adjustment that takes the running subtotal to zero is not partial', async () => {
      const o = id('full');
      await state.apply(acc, [
        event('purchase', o, { subtotal: 40, total: 40 }),
        event('return', o, { subtotal: 40, total: 40 }),
      ]);
      expect(await summary(o)).toMatchObject({
        subtotal: 0,
        revenue: 0,
        partial: false,
        counts_for_lifecycle: true,
      });
    });

    it('rule 4: a refund above the purchase takes the totals negative', async () => {
      const o = id('neg');
      await state.apply(acc, [
        event('purchase', o, { subtotal: 10, total: 12 }),
        event('refund', o, { subtotal: 15, total: 18 }),
      ]);
      expect(await summary(o)).toMatchObject({ subtotal: -5, total: -6, revenue: -5, partial: false });
    });

    it('row 4: cancel reduces revenue, is recorded, and the order stops counting toward the lifecycle', async () => {
      const o = id('r4');
      await state.apply(acc, [event('purchase', o, { subtotal: 80, total: 90 })]);
      const { outcomes } = await state.apply(acc, [event('cancel', o, { subtotal: 30, total: 30 })]);
      expect(outcomes[0]).toMatchObject({ applied: true, recorded: true });
      expect(await summary(o)).toMatchObject({
        subtotal: 50,
        total: 60,
        revenue: 50,
        cancelled: true,
        counts_for_lifecycle: false,
        partial: true,
      });
    });

    it('a cancel that names no amount voids the whole order', async () => {
      const o = id('void');
      await state.apply(acc, [event('purchase', o, { subtotal: 80, total: 90 }), event('cancel', o)]);
      expect(await summary(o)).toMatchObject({
        subtotal: 0,
        total: 0,
        revenue: 0,
        cancelled: true,
        counts_for_lifecycle: false,
      });
    });

    it('row 5: an entity update changes fields only, produces no event, and never creates an order', async () => {
      const o = id('r5');
      await state.apply(acc, [
        event('purchase', o, { subtotal: 5, total: 5, fields: { coupon_code: 'X', phone: '1' } }),
      ]);
      const { outcomes } = await state.apply(acc, [
        update(o, { coupon_code: 'Y', phone: null }),
        update(id('missing'), { coupon_code: 'Z' }),
      ]);
      expect(outcomes).toEqual([
        { applied: true, seq: 2, recorded: false },
        { applied: false, seq: 0, recorded: false },
      ]);
      expect(await summary(o)).toMatchObject({ subtotal: 5, fields: { coupon_code: 'Y' } });
      expect((await summary(o)).fields).not.toHaveProperty('phone'); // null unsets
      expect(await state.get(acc, id('missing'))).toBeUndefined();
    });

    it('rule 5: address and coupon take the value of the last event that had them, by event time', async () => {
      const o = id('last');
      await state.apply(acc, [
        event('purchase', o, {
          ts: 1_000,
          subtotal: 1,
          fields: { ship_address: 'first', coupon_code: 'C1' },
        }),
        event('return', o, { ts: 3_000, subtotal: 0, fields: { ship_address: 'third' } }),
        event('refund', o, {
          ts: 2_000,
          subtotal: 0,
          fields: { ship_address: 'second (late)', bill_address: 'B2' },
        }),
      ]);
      expect((await summary(o)).fields).toEqual({
        ship_address: 'third',
        coupon_code: 'C1',
        bill_address: 'B2',
      });
    });

    it('out of order: a return before its purchase still gives the right final tally and the purchase is kept', async () => {
      const o = id('ooo');
      const early = await state.apply(acc, [
        event('return', o, { ts: 2_000, subtotal: 30, total: 33, customer: 'c9' }),
      ]);
      expect(early.outcomes[0]).toMatchObject({ applied: true, recorded: true });
      expect(await summary(o)).toMatchObject({
        purchased: false,
        subtotal: -30,
        counts_for_lifecycle: false,
      });
      await state.apply(acc, [
        event('purchase', o, { ts: 1_000, subtotal: 100, total: 110, customer: 'c9' }),
      ]);
      expect(await summary(o)).toMatchObject({
        purchased: true,
        subtotal: 70,
        total: 77,
        partial: true,
        counts_for_lifecycle: true,
        svc_id: 'c9',
      });
    });

    it('redelivery: a change applied before moves nothing and gets the same answer, in one batch or two', async () => {
      const o = id('redo');
      const purchase = event('purchase', o, { subtotal: 100, total: 100 });
      const ret = event('return', o, { subtotal: 10, total: 10 });
      const first = await state.apply(acc, [purchase, ret, ret]);
      expect(first.outcomes).toEqual([
        { applied: true, seq: 1, recorded: true },
        { applied: true, seq: 2, recorded: true },
        { applied: false, seq: 2, recorded: true },
      ]);
      const again = await state.apply(acc, [purchase, ret]);
      expect(again.outcomes).toEqual([
        { applied: false, seq: 1, recorded: true },
        { applied: false, seq: 2, recorded: true },
      ]);
      expect(await summary(o)).toMatchObject({ subtotal: 90, version: 2 });
    });

    it('acceptance order: an update processed before the event accepted ahead of it waits for it, then applies', async () => {
      const o = id('pend');
      const after = update(o, { coupon_code: 'LATE', ship_address: 'S2' }, 5_000, 300);
      const first = await state.apply(acc, [after]);
      expect(first).toEqual({
        outcomes: [{ applied: false, seq: 0, recorded: false, pending: true }],
        orders: [],
      });
      expect(await state.get(acc, o)).toBeUndefined();
      // Delivered again while it waits: still pending, kept once.
      expect((await state.apply(acc, [after])).outcomes).toEqual([
        { applied: false, seq: 0, recorded: false, pending: true },
      ]);
      // A return accepted after it does not open it (in acceptance order the update came first)...
      await state.apply(acc, [event('return', o, { at: 400, subtotal: 5, fields: { ship_address: 'S3' } })]);
      expect((await summary(o)).fields).toEqual({ ship_address: 'S3' });
      // ...the purchase accepted before it does: it applies right after it, in the same call.
      const bought = await state.apply(acc, [
        event('purchase', o, { at: 200, subtotal: 50, fields: { coupon_code: 'FIRST' } }),
      ]);
      expect(bought.outcomes).toEqual([{ applied: true, seq: 2, recorded: true }]);
      expect(orderSummary(bought.orders[0]!)).toMatchObject({
        version: 3,
        subtotal: 45,
        fields: { coupon_code: 'LATE', ship_address: 'S2' }, // by time: the update's 5000 beats the events' 1000
      });
      // Applied once: its redelivery now answers with the version it got.
      expect((await state.apply(acc, [after])).outcomes).toEqual([
        { applied: false, seq: 3, recorded: false },
      ]);
      expect((await summary(o)).version).toBe(3);
    });

    it('acceptance order: an update accepted before every event of its order never applies, processed late or not', async () => {
      const o = id('early');
      await state.apply(acc, [event('purchase', o, { at: 500, subtotal: 1, fields: { coupon_code: 'P' } })]);
      const early = await state.apply(acc, [update(o, { coupon_code: 'EARLY' }, 5_000, 100)]);
      expect(early.outcomes).toEqual([{ applied: false, seq: 0, recorded: false, pending: true }]);
      expect(await summary(o)).toMatchObject({ version: 1, fields: { coupon_code: 'P' } });
      // An update without an acceptance order (logged before it was kept) follows the old rule: it applies.
      await state.apply(acc, [update(o, { bill_address: 'B' })]);
      expect(await summary(o)).toMatchObject({ version: 2, fields: { coupon_code: 'P', bill_address: 'B' } });
    });

    it.each([
      ['in acceptance order', [0, 1]],
      ['in reverse', [1, 0]],
    ])('rule 5: a tie of time goes to the change accepted later, applied %s', async (_label, indexes) => {
      const o = id(`tie${indexes.join('')}`);
      await state.apply(acc, [event('purchase', o, { at: 10, ts: 1_000, subtotal: 1 })]);
      const both = [
        event('return', o, { at: 20, ts: 2_000, subtotal: 0, fields: { ship_address: 'older' } }),
        event('refund', o, { at: 30, ts: 2_000, subtotal: 0, fields: { ship_address: 'newer' } }),
      ];
      for (const i of indexes) await state.apply(acc, [both[i]!]);
      expect((await summary(o)).fields).toEqual({ ship_address: 'newer' });
    });

    it('rebuild keeps a pending update pending, and applies it with the event that opens it', async () => {
      const o = id('rpend');
      const changes = [
        update(o, { coupon_code: 'WAITING' }, 5_000, 900),
        event('return', o, { at: 950, subtotal: 2 }),
      ];
      await state.apply(other, changes);
      const before = await state.get(other, o);
      expect(await state.beginRebuild(other)).toBe(true);
      async function* stored() {
        for (const c of changes) yield await Promise.resolve(c);
      }
      expect(await state.load(other, stored())).toBe(2);
      expect(await state.get(other, o)).toEqual(before);
      await state.apply(other, [event('purchase', o, { at: 800, subtotal: 10 })]);
      expect(await summary(o, other)).toMatchObject({
        version: 3,
        subtotal: 8,
        fields: { coupon_code: 'WAITING' },
      });
    });

    it('rule 1 in acceptance order: the purchase accepted first is kept, whichever was processed first', async () => {
      // P1 accepted 100th (subtotal 100, customer c1), P2 accepted 200th (subtotal 7, customer c2), a
      // return (5) between. One processor in acceptance order keeps P1; here each order of the three.
      const p1 = (o: string) =>
        event('purchase', o, {
          id: `${o}-p1`,
          at: 100,
          ts: 1_000,
          subtotal: 100,
          total: 110,
          customer: 'c1',
        });
      const p2 = (o: string) =>
        event('purchase', o, { id: `${o}-p2`, at: 200, ts: 2_000, subtotal: 7, total: 7, customer: 'c2' });
      const ret = (o: string) => event('return', o, { id: `${o}-r`, at: 150, subtotal: 5, total: 5 });
      const orders = [
        [p1, ret, p2],
        [p2, p1, ret],
        [p2, ret, p1],
        [ret, p2, p1],
      ];
      for (const [i, order] of orders.entries()) {
        const o = id(`kept${i}`);
        const outcomes = [];
        for (const change of order) outcomes.push(...(await state.apply(acc, [change(o)])).outcomes);
        const kept = (await state.get(acc, o))!;
        expect([i, kept.purchaseEventId, kept.displacedPurchases ?? []]).toEqual([
          i,
          `${o}-p1`,
          order.indexOf(p2) < order.indexOf(p1) ? [`${o}-p2`] : [],
        ]);
        expect(orderSummary(kept)).toMatchObject({
          svc_id: 'c1',
          ts: 1_000,
          subtotal: 95,
          total: 105,
          version: 3,
        });
        // P1 is recorded; P2 only when it was processed first (its rows are then deleted: displaced).
        expect(outcomes[order.indexOf(p1)]!.recorded).toBe(true);
        // Redelivered, P2 is not recorded again, and P1 still is.
        const again = await state.apply(acc, [p2(o), p1(o)]);
        expect(again.outcomes.map((x) => [x.applied, x.recorded])).toEqual([
          [false, false],
          [false, true],
        ]);
      }
    });

    it('a rebuild keeps the purchase accepted first, and the purchase it displaced', async () => {
      const o = id('keptreb');
      const changes = [
        event('purchase', o, { id: `${o}-p2`, at: 200, subtotal: 7 }),
        event('purchase', o, { id: `${o}-p1`, at: 100, subtotal: 100 }),
      ];
      await state.apply(other, changes);
      const before = await state.get(other, o);
      expect(before).toMatchObject({ purchaseEventId: `${o}-p1`, displacedPurchases: [`${o}-p2`] });
      expect(await state.beginRebuild(other)).toBe(true);
      async function* stored() {
        for (const c of changes) yield await Promise.resolve(c);
      }
      await state.load(other, stored());
      expect(await state.get(other, o)).toEqual(before);
    });

    it('keeps accounts apart', async () => {
      const o = id('iso');
      await state.apply(acc, [event('purchase', o, { subtotal: 1 })]);
      await state.apply(other, [event('purchase', o, { subtotal: 2 })]);
      expect((await summary(o, acc)).subtotal).toBe(1);
      expect((await summary(o, other)).subtotal).toBe(2);
    });

    it('rebuilds from the changes the store holds: same state, and old change ids are still recognised', async () => {
      const o = id('reb');
      const changes = [
        event('return', o, { subtotal: 5 }),
        event('purchase', o, { subtotal: 50, fields: { coupon_code: 'K' } }),
        event('purchase', o, { subtotal: 70 }),
        update(o, { ship_address: 'S' }),
      ];
      await state.apply(other, changes);
      const before = await state.get(other, o);
      expect(await state.beginRebuild(other)).toBe(true);
      async function* stored() {
        for (const c of changes) yield await Promise.resolve(c);
      }
      // Every change of the account is in the store; only this order's are replayed here, so others vanish.
      expect(await state.load(other, stored())).toBe(4);
      expect(await state.get(other, o)).toEqual(before);
      const replay = await state.apply(other, [changes[1]!]);
      expect(replay.outcomes).toEqual([{ applied: false, seq: 2, recorded: true }]);
      expect(await state.get(other, id('iso'))).toBeUndefined();
    });
  });
}
