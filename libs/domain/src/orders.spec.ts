import {
  applyOrderChange,
  emptyOrder,
  keptOrder,
  lineItemEventName,
  normalizeOrder,
  normalizeOrderUpdate,
  orderEventChange,
  orderSubtotal,
  orderSummary,
  orderUpdateChange,
  toUnits,
  type OrderAction,
  type OrderChange,
  type OrderData,
  type OrderSnapshot,
  type OrderSummary,
} from './orders.js';

let n = 0;
/** An order event change with amounts in currency. */
function ev(
  action: OrderAction,
  amounts: { subtotal?: number; total?: number } = {},
  opts: { id?: string; ts?: number; fields?: OrderChange['fields']; customer?: string } = {},
): OrderChange {
  const order: OrderData = { order_id: 'o1', fields: opts.fields ?? {}, items: [], ...amounts };
  return orderEventChange(opts.id ?? `e${++n}`, action, opts.ts ?? 1_000, order, opts.customer ?? 'c1');
}
const upd = (fields: OrderChange['fields'], ts = 9_000): OrderChange =>
  orderUpdateChange(`u${++n}`, { order_id: 'o1', fields }, ts);

/** Applies changes in order to a fresh order; returns the final summary and every result. */
function run(changes: OrderChange[]) {
  let state: OrderSnapshot | undefined;
  const applied = new Map<string, number>();
  const results = changes.map((c) => {
    const r = applyOrderChange(state, applied, c);
    state = r.state;
    return { applied: r.applied, seq: r.seq, recorded: r.recorded };
  });
  return { summary: state && orderSummary(state), results };
}

describe('the order table of the spec ("States and transitions / Order actions"), row by row', () => {
  type Case = [string, OrderChange[], Partial<OrderSummary> | undefined, boolean[]];
  const cases: Case[] = [
    [
      'no order + purchase: created, recorded, tally started',
      [ev('purchase', { subtotal: 100, total: 110 })],
      { purchased: true, subtotal: 100, total: 110, revenue: 100, counts_for_lifecycle: true, version: 1 },
      [true],
    ],
    [
      'order exists + purchase: ignored (not recorded, tally unchanged), fields still processed',
      [
        ev('purchase', { subtotal: 100, total: 110 }, { fields: { ship_address: 'a' } }),
        ev('purchase', { subtotal: 7, total: 7 }, { ts: 2_000, fields: { ship_address: 'b' } }),
      ],
      { subtotal: 100, total: 110, fields: { ship_address: 'b' }, version: 2 },
      [true, false],
    ],
    [
      'order exists + return: coerced negative and added; revenue falls; still counts',
      [ev('purchase', { subtotal: 100, total: 110 }), ev('return', { subtotal: 40, total: 44 })],
      { subtotal: 60, total: 66, revenue: 60, counts_for_lifecycle: true, partial: true, adjustments: 1 },
      [true, true],
    ],
    [
      'order exists + refund: the same semantics as return (rule 6)',
      [ev('purchase', { subtotal: 100, total: 110 }), ev('refund', { subtotal: -40, total: -44 })],
      { subtotal: 60, total: 66, revenue: 60, counts_for_lifecycle: true, partial: true },
      [true, true],
    ],
    [
      'repeated partial returns are all accepted (rule 2: not de-duplicated)',
      [
        ev('purchase', { subtotal: 100, total: 100 }),
        ev('return', { subtotal: 10, total: 10 }),
        ev('return', { subtotal: 10, total: 10 }),
        ev('refund', { subtotal: 10, total: 10 }),
      ],
      { subtotal: 70, adjustments: 3, partial: true },
      [true, true, true, true],
    ],
    [
      'order exists + cancel: revenue reduced, recorded, no longer counts toward lifecycle',
      [ev('purchase', { subtotal: 100, total: 110 }), ev('cancel', { subtotal: 100, total: 110 })],
      { subtotal: 0, revenue: 0, cancelled: true, counts_for_lifecycle: false, partial: false },
      [true, true],
    ],
    [
      'a partial cancel keeps the rest of the revenue',
      [ev('purchase', { subtotal: 100, total: 110 }), ev('cancel', { subtotal: 25, total: 25 })],
      { subtotal: 75, total: 85, revenue: 75, cancelled: true, counts_for_lifecycle: false, partial: true },
      [true, true],
    ],
    [
      'a cancel without amounts voids the order',
      [ev('purchase', { subtotal: 100, total: 110 }), ev('cancel')],
      { subtotal: 0, total: 0, revenue: 0, cancelled: true, partial: false },
      [true, true],
    ],
    [
      'order exists + entity update: fields updated, no event',
      [ev('purchase', { subtotal: 5 }, { fields: { coupon_code: 'A' } }), upd({ coupon_code: 'B' })],
      { subtotal: 5, fields: { coupon_code: 'B' } },
      [true, false],
    ],
    ['no order + entity update: refused, nothing created', [upd({ coupon_code: 'B' })], undefined, [false]],
  ];
  it.each(cases)('%s', (_name, changes, expected, recorded) => {
    const { summary, results } = run(changes);
    if (expected === undefined) expect(summary).toBeUndefined();
    else expect(summary).toMatchObject(expected);
    expect(results.map((r) => r.recorded)).toEqual(recorded);
  });
});

describe('the rules of the order table', () => {
  it('rule 1: only the first purchase of an order_id is kept, whatever it says', () => {
    const { summary } = run([
      ev('purchase', { subtotal: 1 }, { id: 'first', customer: 'c1', ts: 5 }),
      ev('purchase', { subtotal: 2 }, { id: 'second', customer: 'c2', ts: 1 }),
    ]);
    expect(summary).toMatchObject({ subtotal: 1, svc_id: 'c1', ts: 5 });
  });

  it.each([
    ['above zero: partial', 60, true],
    ['exactly zero: not partial', 100, false],
    ['below zero: not partial', 130, false],
  ])('rule 3: a return leaving the running subtotal %s', (_n, returned, partial) => {
    const { summary } = run([ev('purchase', { subtotal: 100 }), ev('return', { subtotal: returned })]);
    expect(summary!.partial).toBe(partial);
  });

  it('rule 4: totals may go negative (a refund above the purchase, or a return before it)', () => {
    expect(
      run([ev('purchase', { subtotal: 10, total: 10 }), ev('refund', { subtotal: 25, total: 30 })]).summary,
    ).toMatchObject({ subtotal: -15, total: -20 });
    expect(run([ev('return', { subtotal: 10, total: 12 })]).summary).toMatchObject({
      purchased: false,
      subtotal: -10,
      total: -12,
      counts_for_lifecycle: false,
    });
  });

  it('out of order: a return before its purchase gives the same final tally as in order', () => {
    const purchase = () => ev('purchase', { subtotal: 100, total: 120 }, { ts: 1 });
    const ret = () => ev('return', { subtotal: 30, total: 36 }, { ts: 2 });
    const inOrder = run([purchase(), ret()]).summary!;
    const reversed = run([ret(), purchase()]).summary!;
    for (const field of [
      'subtotal',
      'total',
      'revenue',
      'partial',
      'counts_for_lifecycle',
      'purchased',
    ] as const) {
      expect(reversed[field]).toEqual(inOrder[field]);
    }
  });

  it('rule 5: ship_address, bill_address and coupon_code take the value of the last event that had them', () => {
    const { summary } = run([
      ev('purchase', {}, { ts: 10, fields: { ship_address: 's1', bill_address: 'b1', coupon_code: 'c1' } }),
      ev('return', {}, { ts: 30, fields: { ship_address: 's3' } }),
      ev('refund', {}, { ts: 20, fields: { ship_address: 's2', coupon_code: 'c2' } }), // arrives late
    ]);
    expect(summary!.fields).toEqual({ ship_address: 's3', bill_address: 'b1', coupon_code: 'c2' });
  });

  it('rule 5: a tie in time goes to the later arrival; null unsets', () => {
    const { summary } = run([
      ev('purchase', {}, { ts: 10, fields: { coupon_code: 'a', phone: '1' } }),
      ev('refund', {}, { ts: 10, fields: { coupon_code: 'b', phone: null } }),
    ]);
    expect(summary!.fields).toEqual({ coupon_code: 'b' });
  });

  it('a change applied before (redelivery) moves nothing and gets the same answer', () => {
    const purchase = ev('purchase', { subtotal: 50 });
    const ret = ev('return', { subtotal: 5 });
    const { summary, results } = run([purchase, ret, ret, purchase]);
    expect(summary).toMatchObject({ subtotal: 45, version: 2 });
    expect(results).toEqual([
      { applied: true, seq: 1, recorded: true },
      { applied: true, seq: 2, recorded: true },
      { applied: false, seq: 2, recorded: true },
      { applied: false, seq: 1, recorded: true },
    ]);
  });

  it('keeps tallies exact over many small amounts (units of 1/10000)', () => {
    const changes = [ev('purchase', { subtotal: 1 })];
    for (let i = 0; i < 10; i++) changes.push(ev('refund', { subtotal: 0.1 }));
    expect(run(changes).summary!.subtotal).toBe(0);
  });

  it("the customer of the order is the purchase's, or the first change's until a purchase arrives", () => {
    expect(run([ev('return', {}, { customer: 'r' })]).summary!.svc_id).toBe('r');
    expect(
      run([ev('return', {}, { customer: 'r' }), ev('purchase', {}, { customer: 'p' })]).summary!.svc_id,
    ).toBe('p');
  });

  it('starts empty', () => {
    expect(orderSummary(emptyOrder('x'))).toMatchObject({
      order_id: 'x',
      version: 0,
      purchased: false,
      subtotal: 0,
    });
  });
});

describe('order data', () => {
  it('revenue comes from subtotal; without one, the subtotal is the sum of the item subtotals', () => {
    expect(orderSubtotal({ subtotal: 12, items: [{ subtotal: 99 }] })).toBe(12);
    expect(orderSubtotal({ items: [{ subtotal: 0.1 }, { subtotal: 0.2 }, { price: 3 }] })).toBe(0.3);
    expect(orderSubtotal({ items: [{ price: 3 }] })).toBeUndefined();
    expect(orderSubtotal({ items: [] })).toBeUndefined();
    const change = orderEventChange(
      'e',
      'purchase',
      5,
      normalized({ order_id: 'o', items: [{ subtotal: 2.5 }] }),
      'c',
    );
    expect(change).toMatchObject({ subtotal: toUnits(2.5), ts: 5 });
    expect(change).not.toHaveProperty('total');
  });

  function normalized(raw: Record<string, unknown>): OrderData {
    const result = normalizeOrder(raw);
    if ('invalid' in result) throw new Error(result.reason);
    return result.order;
  }

  it('normalizes data.order: known fields, ts read, "" unsets, unknown fields dropped', () => {
    const result = normalizeOrder({
      order_id: 'o1',
      ts: '2024-03-05',
      subtotal: 10,
      total: 12,
      coupon_code: '',
      ship_address: 'x',
      gift_wrap: true,
      items: [{ product_id: 'p', price: 1, quantity: 2, subtotal: 2, colour: 'red' }],
    });
    expect(result).toEqual({
      order: {
        order_id: 'o1',
        ts: Date.UTC(2024, 2, 5),
        subtotal: 10,
        total: 12,
        fields: { coupon_code: null, ship_address: 'x' },
        items: [{ product_id: 'p', price: 1, quantity: 2, subtotal: 2 }],
      },
      dropped: ['gift_wrap'],
    });
    expect(normalizeOrder({ order_id: 'o', ts: 'yesterday' })).toEqual({
      invalid: 'ts',
      reason: expect.any(String),
    });
    expect(orderEventChange('e', 'return', 1, normalized({ order_id: 'o', ts: 1_700_000_000 }), 'c').ts).toBe(
      1_700_000_000_000,
    );
  });

  it('keeps the sent order on the event without undefined fields, and names what it dropped', () => {
    expect(keptOrder({ order_id: 'o', x: 1, items: [{ product_id: 'p', y: 2 }] })).toEqual({
      order: { order_id: 'o', items: [{ product_id: 'p' }] },
      dropped: ['order.x', 'order.items.y'],
    });
  });

  it('an order entity update changes value fields only', () => {
    expect(normalizeOrderUpdate({ order_id: 'o', coupon_code: 'C', bill_address: '', misc: 1 })).toEqual({
      order_id: 'o',
      fields: { coupon_code: 'C', bill_address: null },
      dropped: ['misc'],
    });
    expect(normalizeOrderUpdate({ order_id: 'o', subtotal: 1, items: [], total: null })).toEqual({
      refused: ['subtotal', 'items'],
    });
  });

  it('names line-item events after the action (spec "Events": Order Line Item Purchase)', () => {
    expect(lineItemEventName('purchase')).toBe('Order Line Item Purchase');
    expect(lineItemEventName('return')).toBe('Order Line Item Return');
  });
});
