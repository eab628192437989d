import type { IngestMessage } from '@cdp/contracts';
import { normalizeEvent, type EventRecord } from '@cdp/domain';
import { IngestPipeline } from '@cdp/processor';
import { AnalyticStore } from '@cdp/store';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { countOf, readStore } from './support/store-checks.js';
import { loseDerivedState, type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { expectInvalids } from './support/answers.js';

type Row = Record<string, unknown>;

interface Snapshot {
  orders: Map<string, Row>;
  lineItems: Row[];
  orderEvents: Row[];
  products: Map<string, Row>;
  /** Product events and line items joined to the product feed by product_id (the built-in relation). */
  joined: Row[];
}

/**
 * Events, products and orders (spec "States and transitions / Order actions") end to end on both
 * wirings: everything is sent first, in the order each case needs, then the store is read once (scaled
 * out, chDB belongs to the processor, which is stopped for the read) and each case checks its rows.
 */
describe.each(WIRINGS)('orders, products and events (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;
  let store: Snapshot;

  const post = (
    path: string,
    body: unknown,
    headers: Record<string, string> = { 'x-api-key': acc.publicKey },
  ) =>
    p
      .http()
      .post(path)
      .set(headers)
      .send(body as object);
  const v2 = (path: string, body: unknown) => post(path, body, { 'svc-tracker-id': acc.publicKey });
  const profile = (query: string) => p.http().get(`/v3/profiles?${query}`).set('x-api-key', acc.privateKey);

  const order = (action: string, orderId: string, fields: Row, email = 'ann@x.com') => ({
    type: 'order',
    action,
    identifiers: { email },
    data: { order: { order_id: orderId, ...fields } },
  });
  /** An order exists once its first event is processed: an (empty) update of it is accepted then. */
  const processed = (orderId: string) =>
    eventually(async () => (await post('/v3/objects/orders', { order_id: orderId })).status === 202);

  /**
   * The account's orders, line items, order events and products, read once (scaled out, after the
   * stream is empty: messages leave it when acknowledged, after their store write).
   */
  const snapshot = (): Promise<Snapshot> =>
    readStore(
      p,
      acc.id,
      async (query): Promise<Snapshot> => ({
        orders: new Map(
          (await query<Row>('SELECT * FROM {db}.orders FINAL')).map((r) => [String(r.order_id), r]),
        ),
        lineItems: await query<Row>('SELECT * FROM {db}.line_items ORDER BY order_id, line_item_id'),
        orderEvents: await query<Row>(
          "SELECT action, `order`, svc_id FROM {db}.events WHERE type = 'order' ORDER BY ts, event_id",
        ),
        products: new Map(
          (await query<Row>('SELECT * FROM {db}.products FINAL')).map((r) => [String(r.product_id), r]),
        ),
        joined: await query<Row>(
          `SELECT * FROM (SELECT 'event' AS kind, e.action AS what, e.product_id AS product_id, p.name AS name
         FROM {db}.events AS e INNER JOIN (SELECT * FROM {db}.products FINAL) AS p ON e.product_id = p.product_id
         WHERE e.type = 'product'
         UNION ALL
         SELECT 'line item', l.order_id, l.product_id, p.name
         FROM {db}.line_items AS l INNER JOIN (SELECT * FROM {db}.products FINAL) AS p ON l.product_id = p.product_id
         WHERE l.order_id = 'oA')
         ORDER BY kind, what, product_id`,
        ),
      }),
      { once: true, timeoutMs: 90_000 },
    );

  const eventsOf = (orderId: string) =>
    store.orderEvents.filter((e) => (JSON.parse(String(e.order)) as Row).order_id === orderId);
  const orderRow = (orderId: string) => {
    const row = store.orders.get(orderId);
    if (!row) throw new Error(`no order row for ${orderId}`);
    return row;
  };

  /**
   * Waits until everything sent so far is in the store, then reads it. Scaled out: the stream is empty
   * (messages leave it when acknowledged, after their store write; a message redelivered after a crash
   * comes back late, so a marker would not do). Embedded: a marker product is in the store (products
   * are the last table a batch writes, and batches are written one after the other).
   */
  async function settleAndRead(marker: string): Promise<Snapshot> {
    if (p instanceof EmbeddedPlatform) {
      expect((await post('/v3/objects/products', { product_id: marker })).status).toBe(202);
      const markerSql = 'SELECT count() AS n FROM {db}.products WHERE product_id = {id:String}';
      await readStore(p, acc.id, async (query) => (await countOf(query, markerSql, { id: marker })) === 1, {
        timeoutMs: 30_000,
      });
    }
    return snapshot();
  }

  beforeAll(async () => {
    ({ p, acc } = await startWithAccount(start));
    const ok = async (res: Promise<{ status: number; body: unknown }>) => {
      const r = await res;
      if (r.status !== 202) throw new Error(`expected 202, got ${r.status}: ${JSON.stringify(r.body)}`);
    };

    // The product feed, then an update that names two fields (v2 entity): the rest is kept.
    await ok(
      post('/v3/objects/products', [
        {
          product_id: 'p1',
          name: 'Laptop',
          category: 'Electronics > Computers > Laptops',
          price: 999.5,
          brand: 'Acme',
          parent_product_id: 'p0',
        },
        { product_id: 'p2', name: 'Mouse', price: 20, sku: 'M-1' },
      ]),
    );
    await ok(
      v2('/v2/entities', { type: 'product', data: { product_id: 'p1', name: 'Laptop Pro', price: 1099 } }),
    );
    await ok(v2('/v2/entities', [{ type: 'product', data: { product_id: 'p2', sku: '' } }]));

    // A product event that names only the product: the rest comes from the feed.
    await ok(
      post('/v3/events', {
        type: 'product',
        action: 'detail',
        identifiers: { email: 'ann@x.com' },
        data: { product_id: 'p1' },
      }),
    );

    // A purchase with items and no subtotal: the subtotal is the sum of the item subtotals.
    await ok(
      post(
        '/v3/events',
        order('purchase', 'oA', {
          total: 1100,
          ship_address: 'Oslo 1',
          coupon_code: 'WELCOME',
          items: [
            { product_id: 'p1', price: 999.5, quantity: 1, subtotal: 999.5 },
            { product_id: 'p2', price: 20, quantity: 2, subtotal: 40 },
          ],
        }),
      ),
    );

    // A second purchase of an existing order: no event, no tally change, but its fields apply.
    await ok(
      post('/v3/events', order('purchase', 'oB', { subtotal: 100, total: 110, ship_address: 'first' })),
    );
    await processed('oB');
    await ok(
      post(
        '/v3/events',
        order('purchase', 'oB', {
          subtotal: 500,
          total: 550,
          ship_address: 'second',
          items: [{ product_id: 'p2', subtotal: 500 }],
        }),
      ),
    );

    // Partial returns and refunds, each in its own request: all count, coerced negative.
    await ok(post('/v3/events', order('purchase', 'oC', { subtotal: 100, total: 120 })));
    await ok(post('/v3/events', order('return', 'oC', { subtotal: 20, total: 24 })));
    await ok(post('/v3/events', order('refund', 'oC', { subtotal: -30, total: 36 })));

    // A cancel.
    await ok(post('/v3/events', order('purchase', 'oD', { subtotal: 80, total: 90 })));
    await ok(post('/v3/events', order('cancel', 'oD', { subtotal: 80, total: 90 })));

    // Out of order: the return is processed before its purchase arrives.
    await ok(post('/v3/events', order('return', 'oE', { subtotal: 30, total: 33 })));
    await processed('oE');
    await ok(post('/v3/events', order('purchase', 'oE', { subtotal: 100, total: 110 })));

    // The v2 order event shape, then a v2 entity update of that order (fields only, no event).
    await ok(
      v2('/v2/events', {
        type: 'order',
        data: {
          action: 'purchase',
          email: 'v2@x.com',
          order: {
            order_id: 'oF',
            total: 10,
            subtotal: 9,
            coupon_code: 'FIRST',
            items: [{ product_id: 'p1', price: 9, quantity: 1, subtotal: 9 }],
          },
        },
      }),
    );
    await processed('oF');
    await ok(
      v2('/v2/entities', {
        type: 'order',
        data: { order_id: 'oF', coupon_code: 'LATER', bill_address: 'Bergen' },
      }),
    );
    await ok(v2('/v2/entities', { type: 'customer', data: { email: 'cust@x.com', first_name: 'Cee' } }));

    store = await settleAndRead('orders-marker');
  }, 120_000);
  afterAll(() => p.close(), 30_000);

  it('a purchase with items creates the order, its event and one line-item event per item', () => {
    expect(orderRow('oA')).toMatchObject({
      purchased: true,
      subtotal: 1039.5,
      total: 1100,
      revenue: 1039.5,
      counts_for_lifecycle: true,
      cancelled: false,
      ship_address: 'Oslo 1',
      coupon_code: 'WELCOME',
    });
    expect(eventsOf('oA').map((e) => e.action)).toEqual(['purchase']);
    expect(orderRow('oA').svc_id).toBe(eventsOf('oA')[0]!.svc_id);
    const items = store.lineItems.filter((i) => i.order_id === 'oA');
    expect(items).toEqual([
      expect.objectContaining({
        event: 'Order Line Item Purchase',
        product_id: 'p1',
        quantity: 1,
        subtotal: 999.5,
      }),
      expect.objectContaining({
        event: 'Order Line Item Purchase',
        product_id: 'p2',
        quantity: 2,
        subtotal: 40,
      }),
    ]);
  });

  it('a second purchase of an order is ignored for history and the tally, but its fields apply', () => {
    expect(orderRow('oB')).toMatchObject({ subtotal: 100, total: 110, ship_address: 'second' });
    expect(eventsOf('oB').map((e) => e.action)).toEqual(['purchase']);
    expect(JSON.parse(String(eventsOf('oB')[0]!.order))).toMatchObject({ subtotal: 100 });
    expect(store.lineItems.filter((i) => i.order_id === 'oB')).toEqual([]);
  });

  it('partial returns and refunds are all accepted, coerced negative, and the order still counts', () => {
    expect(orderRow('oC')).toMatchObject({
      subtotal: 50,
      total: 60,
      revenue: 50,
      partial: true,
      adjustments: 2,
      counts_for_lifecycle: true,
    });
    expect(eventsOf('oC').map((e) => e.action)).toEqual(['purchase', 'return', 'refund']);
  });

  it('a cancel reduces revenue, keeps both events, and the order stops counting toward the lifecycle', () => {
    expect(orderRow('oD')).toMatchObject({
      subtotal: 0,
      total: 0,
      revenue: 0,
      cancelled: true,
      counts_for_lifecycle: false,
      partial: false,
    });
    expect(
      eventsOf('oD')
        .map((e) => e.action)
        .sort(),
    ).toEqual(['cancel', 'purchase']);
  });

  it('a return processed before its purchase still gives the right final tally', () => {
    expect(orderRow('oE')).toMatchObject({
      purchased: true,
      subtotal: 70,
      total: 77,
      revenue: 70,
      partial: true,
      counts_for_lifecycle: true,
    });
    expect(
      eventsOf('oE')
        .map((e) => e.action)
        .sort(),
    ).toEqual(['purchase', 'return']);
  });

  it('takes the v2 order event shape, and a v2 order entity update changes fields without an event', async () => {
    expect(orderRow('oF')).toMatchObject({
      subtotal: 9,
      total: 10,
      coupon_code: 'LATER',
      bill_address: 'Bergen',
      purchased: true,
    });
    expect(eventsOf('oF').map((e) => e.action)).toEqual(['purchase']);
    expect(store.lineItems.filter((i) => i.order_id === 'oF')).toHaveLength(1);
    expect((await profile('email=v2@x.com')).status).toBe(200);
  });

  it('the product feed keeps the category as given and an update replaces only the values it names', () => {
    expect(store.products.get('p1')).toMatchObject({
      name: 'Laptop Pro',
      price: 1099,
      category: 'Electronics > Computers > Laptops',
      brand: 'Acme',
      parent_product_id: 'p0',
    });
    expect(store.products.get('p2')).toMatchObject({ name: 'Mouse', price: 20, sku: null });
    expect([...store.products.keys()].filter((id) => !id.endsWith('marker')).sort()).toEqual(['p1', 'p2']);
  });

  it('relates product events and line items to the product feed by product_id', () => {
    expect(store.joined).toEqual([
      { kind: 'event', what: 'detail', product_id: 'p1', name: 'Laptop Pro' },
      { kind: 'line item', what: 'oA', product_id: 'p1', name: 'Laptop Pro' },
      { kind: 'line item', what: 'oA', product_id: 'p2', name: 'Mouse' },
    ]);
  });

  it('a v2 customer entity updates the profile as POST /v3/profiles does', async () => {
    const res = await profile('email=cust@x.com');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ attributes: { email: 'cust@x.com', first_name: 'Cee', name: 'Cee' } });
  });

  it('refuses an update of an order that does not exist, on v2 and on /v3/objects/orders', async () => {
    const res = await v2('/v2/entities', { type: 'order', data: { order_id: 'nope', coupon_code: 'X' } });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ status: 404, detail: { message: expect.stringContaining('nope') } });
    expect((await post('/v3/objects/orders', [{ order_id: 'oA' }, { order_id: 'nope2' }])).status).toBe(404);
  });

  it('documents the new endpoints and reports the order state in /health', async () => {
    const openapi = await p.http().get('/openapi.json');
    expect(Object.keys(openapi.body.paths)).toEqual(
      expect.arrayContaining(['/v2/entities', '/v2/events', '/v3/objects/products', '/v3/objects/orders']),
    );
    const health = await p.http().get('/health');
    expect(health.body.drivers.orders).toMatchObject({ ready: true });
  });

  it('v2 takes its key from Svc-Tracker-Id only', async () => {
    const body = { type: 'customer', data: { email: 'k@x.com' } };
    const none = await post('/v2/entities', body, {});
    expect(none.status).toBe(401);
    expect(none.body.detail.message).toContain('could not be authenticated');
    expect((await post('/v2/entities', body, { 'x-api-key': acc.publicKey })).status).toBe(401);
    expect((await v2('/v2/entities', body)).status).toBe(202);
  });

  it('accepts every standard type/action pair with its fields, and custom events', async () => {
    const id = { email: 'std@x.com' };
    const res = await post('/v3/events', [
      ...['add_to_cart', 'remove_from_cart', 'detail', 'listing'].map((action) => ({
        type: 'product',
        action,
        identifiers: id,
        data: { product_id: 'p1' },
      })),
      { type: 'pageview', identifiers: id, data: { page: '/' } },
      ...['login', 'logout', 'log_out', 'register', 'checkout_form'].map((action) => ({
        type: 'account',
        action,
        identifiers: id,
      })),
      { type: 'newsletter', action: 'subscribe', identifiers: id },
      {
        type: 'navigation',
        action: 'search',
        identifiers: id,
        data: { search_term: 'tv', category: 'A > B' },
      },
      { type: 'list', action: 'subscribe', identifiers: id },
      { type: 'wishlist', action: 'anything', identifiers: id, data: { product_id: 'p9', ts: '2024-05-01' } },
      { type: 'product', action: 'compare', identifiers: id },
    ]);
    expect(res.status).toBe(202);
  });

  it('rejects what a standard event lacks and wrongly typed order and product fields, naming each', async () => {
    const id = { email: 'bad@x.com' };
    const res = await post('/v3/events', [
      { type: 'product', action: 'detail', identifiers: id },
      { type: 'order', action: 'ship', identifiers: id, data: { order: { order_id: 'x' } } },
      { type: 'order', action: 'purchase', identifiers: id, data: {} },
      { type: 'order', action: 'purchase', identifiers: id, data: { order: { items: [{ price: '9' }] } } },
      { type: 'order', action: 'purchase', identifiers: id, data: { order: { order_id: 'y', ts: 'soon' } } },
    ]);
    expectInvalids(res, [
      {
        event: 0,
        field: 'data.product_id',
        reason: expect.stringContaining('required'),
      },
      {
        event: 1,
        field: 'action',
        reason: expect.stringContaining('purchase, return, refund, cancel'),
      },
      {
        event: 2,
        field: 'data.order',
        reason: expect.stringContaining('required'),
      },
      { event: 3, field: 'data.order.order_id', reason: 'is required' },
      {
        event: 3,
        field: 'data.order.items.0.price',
        reason: expect.any(String),
      },
      { event: 4, field: 'data.order.ts', reason: expect.any(String) },
    ]);
    const products = await post('/v3/objects/products', [
      { name: 'no id' },
      { product_id: 'p', price: 'cheap' },
    ]);
    expectInvalids(products, [
      { event: 0, field: 'product_id', reason: 'is required' },
      { event: 1, field: 'price', reason: expect.any(String) },
    ]);
    const entity = await v2('/v2/entities', [
      { type: 'order', data: { order_id: 'oA', subtotal: 5 } },
      { type: 'shipment', data: {} },
      { type: 'customer', data: { first_name: 'no id' } },
    ]);
    expectInvalids(entity, [
      {
        event: 0,
        field: 'data.subtotal',
        reason: expect.stringContaining('order events'),
      },
      { event: 1, field: 'type', reason: expect.any(String) },
      { event: 2, field: 'data', reason: expect.stringContaining('identifier') },
    ]);
  });

  const orderEvent = (action: string, orderId: string, subtotal: number): EventRecord => {
    const record = normalizeEvent(
      {
        type: 'order',
        action,
        identifiers: { email: 'redo@x.com' },
        data: {
          order: { order_id: orderId, subtotal, total: subtotal, items: [{ product_id: 'p1', subtotal }] },
        },
      },
      Date.now(),
    );
    if ('invalidTs' in record) throw new Error('invalid');
    return record;
  };

  // Drives the processor in-process, so embedded only; scaled out, the next case kills the processor.
  if (_wiring === 'embedded') {
    it('exactly once: a redelivered message, or one whose store write failed after the state moved, counts once', async () => {
      if (!(p instanceof EmbeddedPlatform)) throw new Error('registered on the embedded wiring only');
      const pipeline = p.app.get(IngestPipeline);
      const message = (id: string, records: EventRecord[]): IngestMessage => ({
        id,
        account: acc.id,
        kind: 'events',
        receivedAt: Date.now(),
        records,
      });
      const first = message('redo-1', [orderEvent('purchase', 'oR', 100), orderEvent('return', 'oR', 10)]);
      await pipeline.process([{ handle: 'h1', message: first, deliveryCount: 1, sequence: 1 }]);
      await pipeline.process([{ handle: 'h2', message: first, deliveryCount: 2, sequence: 1 }]);

      // The order state moves, then the store write fails (a crash): the redelivery must still store it.
      const second = message('redo-2', [orderEvent('return', 'oR', 5)]);
      const analytic = p.app.get(AnalyticStore);
      const write = analytic.write.bind(analytic);
      analytic.write = () => Promise.reject(new Error('the store went away'));
      expect(
        (await pipeline.process([{ handle: 'h3', message: second, deliveryCount: 1, sequence: 2 }])).map(
          (r) => r.result,
        ),
      ).toEqual([{ type: 'retry', reason: 'Error: the store went away' }]);
      analytic.write = write;
      await pipeline.process([
        { handle: 'h4', message: first, deliveryCount: 3, sequence: 1 },
        { handle: 'h5', message: second, deliveryCount: 2, sequence: 2 },
      ]);

      store = await snapshot();
      expect(orderRow('oR')).toMatchObject({ subtotal: 85, total: 85, adjustments: 2, version: 3 });
      expect(eventsOf('oR').map((e) => e.action)).toEqual(['purchase', 'return', 'return']);
      expect(store.lineItems.filter((i) => i.order_id === 'oR').map((i) => i.subtotal)).toEqual([
        100, -10, -5,
      ]);
    });
  }

  // Kills the processor's own process, so scaled out only; embedded, the case above drives it in-process.
  if (_wiring === 'scaled out') {
    it('exactly once: killing the processor in the middle of a stream of returns loses and doubles none', async () => {
      if (p instanceof EmbeddedPlatform) throw new Error('registered on the scaled-out wiring only');
      const scaled = p;
      expect(
        (await post('/v3/events', order('purchase', 'oK', { subtotal: 1000, total: 1000 }))).status,
      ).toBe(202);
      await processed('oK');
      const returns = 40;
      for (let i = 0; i < returns; i++) {
        if (i === 10) await scaled.stopProcessor('SIGKILL');
        if (i === 25) await scaled.startProcessor();
        const res = await post('/v3/events', order('return', 'oK', { subtotal: 1, total: 1 }));
        expect(res.status).toBe(202);
      }
      store = await settleAndRead('after-kill');
      expect(orderRow('oK')).toMatchObject({ subtotal: 1000 - returns, adjustments: returns, partial: true });
      expect(eventsOf('oK')).toHaveLength(returns + 1);
    });
  }

  it('rebuilds the order state from the store (embedded: a restart; scaled out: Redis flushed)', async () => {
    p = await loseDerivedState(p);
    // A return moves the rebuilt tally; a purchase of a known order is still a repeat after the rebuild.
    expect((await post('/v3/events', order('return', 'oC', { subtotal: 10, total: 10 }))).status).toBe(202);
    expect(
      (await post('/v3/events', order('purchase', 'oA', { subtotal: 1, ship_address: 'Rebuilt' }))).status,
    ).toBe(202);
    store = await settleAndRead('after-rebuild');
    expect(orderRow('oC')).toMatchObject({ subtotal: 40, total: 50, adjustments: 3 });
    expect(orderRow('oA')).toMatchObject({
      subtotal: 1039.5,
      ship_address: 'Rebuilt',
      coupon_code: 'WELCOME',
    });
    expect(eventsOf('oA')).toHaveLength(1);
  });
});
