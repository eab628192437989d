import { ApiError } from '@cdp/contracts';
import {
  entitiesValidator,
  orderUpdatesValidator,
  productsValidator,
  v2EventsValidator,
  v2ToV3,
} from './commerce.validators.js';

/** The invalids of the 400 a call throws. */
function invalids(call: () => unknown): unknown[] {
  try {
    call();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return ((err as ApiError).detail as { invalids: unknown[] }).invalids;
  }
  throw new Error('expected a 400');
}

describe('v2 events', () => {
  it('lift identifiers and the action out of data (spec "Entities (v2)")', () => {
    expect(
      v2ToV3({
        type: 'order',
        data: {
          action: 'purchase',
          email: 'a@x.com',
          svc_alias_cart: 'c1',
          order: { order_id: 'o' },
          page: '/',
        },
      }),
    ).toEqual({
      type: 'order',
      action: 'purchase',
      identifiers: { email: 'a@x.com', svc_alias_cart: 'c1' },
      data: { order: { order_id: 'o' }, page: '/' },
    });
    expect(v2ToV3({ type: 't', action: 'a', identifiers: { vuid: 'v' }, data: {} })).toEqual({
      type: 't',
      action: 'a',
      identifiers: { vuid: 'v' },
      data: {},
    });
  });

  it('are normalized as v3 events, and their invalids name v2 paths', () => {
    const [record] = v2EventsValidator.parse(
      { type: 'order', data: { action: 'refund', email: 'a@x.com', order: { order_id: 'o', subtotal: -5 } } },
      { nowMs: 1_000, custom: {} },
    );
    expect(record).toMatchObject({
      type: 'order',
      action: 'refund',
      ts: 1_000,
      order: { order_id: 'o', subtotal: -5 },
    });
    expect(
      invalids(() =>
        v2EventsValidator.parse([{ type: 'order', data: { action: 'ship', order: { order_id: 'o' } } }], {
          nowMs: 0,
          custom: {},
        }),
      ),
    ).toEqual([
      { event: 0, field: 'data', reason: expect.stringContaining('identifier'), message: expect.any(String) },
      {
        event: 0,
        field: 'data.action',
        reason: expect.stringContaining('purchase'),
        message: expect.any(String),
      },
    ]);
    expect(
      invalids(() =>
        v2EventsValidator.parse({ type: 'x', data: { email: 5, page: 1 } }, { nowMs: 0, custom: {} }),
      ),
    ).toEqual(
      expect.arrayContaining([
        { event: 0, field: 'data.email', reason: expect.any(String), message: expect.any(String) },
        { event: 0, field: 'data.page', reason: 'must be string', message: expect.any(String) },
      ]),
    );
    // An identifier whose value breaks its rule is named where it was sent, in data or beside it.
    const context = { nowMs: 0, custom: {} };
    expect(
      invalids(() => v2EventsValidator.parse({ type: 'x', data: { email: 'not-an-email' } }, context)),
    ).toEqual([expect.objectContaining({ field: 'data.email' })]);
    expect(
      invalids(() =>
        v2EventsValidator.parse({ type: 'x', identifiers: { email: 'not-an-email' }, data: {} }, context),
      ),
    ).toEqual([expect.objectContaining({ field: 'identifiers.email' })]);
  });
});

describe('entities and objects', () => {
  it('route each entity by type', () => {
    expect(
      entitiesValidator.parse(
        [
          { type: 'customer', data: { email: 'a@x.com', city: 'Oslo' } },
          { type: 'product', data: { product_id: 'p', price: 2 } },
          { type: 'order', data: { order_id: 'o', coupon_code: 'C' } },
        ],
        { customers: {}, products: {} },
      ),
    ).toEqual([
      {
        kind: 'profiles',
        record: { identifiers: { email: 'a@x.com' }, attributes: { email: 'a@x.com', city: 'Oslo' } },
      },
      { kind: 'products', record: { product_id: 'p', fields: { price: 2 } } },
      { kind: 'order-updates', record: { order_id: 'o', fields: { coupon_code: 'C' } } },
    ]);
  });

  it('check data by the schema of its type', () => {
    expect(
      invalids(() =>
        entitiesValidator.parse(
          [
            { type: 'customer', data: { email: 'a@x.com', opted_in: 'yes' } },
            { type: 'product', data: { price: 'x' } },
            { type: 'order', data: { coupon_code: 3 } },
            { type: 'order' },
          ],
          { customers: {}, products: {} },
        ),
      ),
    ).toEqual([
      {
        event: 0,
        field: 'data.opted_in',
        reason: 'must be one of 0, 1, true, false',
        message: expect.any(String),
      },
      { event: 1, field: 'data.product_id', reason: 'is required', message: expect.any(String) },
      { event: 1, field: 'data.price', reason: 'must be number', message: expect.any(String) },
      { event: 2, field: 'data.order_id', reason: 'is required', message: expect.any(String) },
      { event: 2, field: 'data.coupon_code', reason: 'must be string', message: expect.any(String) },
      { event: 3, field: 'data', reason: 'is required', message: expect.any(String) },
    ]);
  });

  it('take up to 1000 products or orders per request, at the edge', () => {
    const products = (n: number) => Array.from({ length: n }, (_, i) => ({ product_id: `p${i}` }));
    expect(productsValidator.parse(products(1000), {})).toHaveLength(1000);
    expect(invalids(() => productsValidator.parse(products(1001), {}))).toEqual([
      { field: 'body', reason: expect.stringContaining('1000 products') },
    ]);
    expect(invalids(() => orderUpdatesValidator.parse({ order_id: 'o', total: 1 }, undefined))).toEqual([
      {
        event: 0,
        field: 'total',
        reason: expect.stringContaining('order events'),
        message: expect.any(String),
      },
    ]);
    expect(invalids(() => orderUpdatesValidator.parse({ order_id: 'o', ts: 5 }, undefined))).toEqual([
      {
        event: 0,
        field: 'ts',
        reason: expect.stringContaining('purchase event'),
        message: expect.any(String),
      },
    ]);
    expect(invalids(() => productsValidator.parse({ product_id: 'x'.repeat(1025) }, {}))).toEqual([
      { event: 0, field: 'product_id', reason: expect.stringContaining('1024'), message: expect.any(String) },
    ]);
  });

  it('keep custom product fields by their type, refuse unreadable ones and drop undefined ones', () => {
    const custom = { in_stock: 'boolean', rating: 'number', launched: 'timestamp' } as const;
    expect(
      productsValidator.parse(
        { product_id: 'p', price: 2, in_stock: 'true', rating: '4.5', launched: 1700000000, color: 'red' },
        custom,
      ),
    ).toEqual([
      {
        product_id: 'p',
        fields: { price: 2, in_stock: true, rating: 4.5, launched: 1700000000 },
        dropped: ['color'],
      },
    ]);
    expect(
      invalids(() => productsValidator.parse([{ product_id: 'p', rating: 'high', in_stock: 2 }], custom)),
    ).toEqual([
      expect.objectContaining({
        event: 0,
        field: 'rating',
        reason: 'must be a number in standard decimal format',
      }),
      expect.objectContaining({ event: 0, field: 'in_stock', reason: 'must be one of 0, 1, true, false' }),
    ]);
    expect(
      invalids(() =>
        entitiesValidator.parse(
          [
            { type: 'product', data: { product_id: 'p', rating: 'high' } },
            { type: 'customer', data: { email: 'a@x.com', tier: 'gold' } },
          ],
          { customers: { tier: 'number' }, products: custom },
        ),
      ),
    ).toEqual([
      expect.objectContaining({ event: 0, field: 'data.rating' }),
      expect.objectContaining({ event: 1, field: 'data.tier' }),
    ]);
    expect(
      entitiesValidator.parse([{ type: 'product', data: { product_id: 'p', rating: 3, size: 'L' } }], {
        customers: {},
        products: custom,
      }),
    ).toEqual([{ kind: 'products', record: { product_id: 'p', fields: { rating: 3 }, dropped: ['size'] } }]);
  });
});
