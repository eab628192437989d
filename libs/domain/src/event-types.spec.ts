import { isStandardEvent, STANDARD_EVENTS, standardEventProblems } from './event-types.js';

describe('standard events (spec "Event fields": type/action combinations)', () => {
  const pairs: [string, string, Record<string, unknown>][] = [
    ['product', 'add_to_cart', { product_id: 'p' }],
    ['product', 'remove_from_cart', { product_id: 'p' }],
    ['product', 'detail', { product_id: 'p' }], // printed "the service" in the spec (spec/NOTES.md)
    ['product', 'listing', { product_id: 'p' }],
    ['pageview', '', { page: '/' }],
    ['account', 'login', {}],
    ['account', 'logout', {}],
    ['account', 'log_out', {}],
    ['account', 'register', {}],
    ['account', 'checkout_form', {}],
    ['newsletter', 'subscribe', {}],
    ['navigation', 'search', { search_term: 'tv', category: 'A > B' }],
    ['list', 'subscribe', {}],
    ['order', 'purchase', { order: { order_id: 'o' } }],
    ['order', 'return', { order: { order_id: 'o' } }],
    ['order', 'refund', { order: { order_id: 'o' } }],
    ['order', 'cancel', { order: { order_id: 'o' } }],
  ];

  it.each(pairs)('%s %s is standard and accepted with its expected fields', (type, action, data) => {
    expect(isStandardEvent(type, action)).toBe(true);
    expect(standardEventProblems(type, action, data)).toEqual([]);
  });

  it('lists exactly the pairs of the spec', () => {
    const listed = Object.entries(STANDARD_EVENTS).flatMap(([type, { actions }]) =>
      actions.length ? actions.map((a) => `${type}/${a}`) : [`${type}/`],
    );
    expect(listed.sort()).toEqual(pairs.map(([t, a]) => `${t}/${a}`).sort());
  });

  it.each([
    ['product', 'detail', {}, 'data.product_id'],
    ['product', 'add_to_cart', { product_id: '' }, 'data.product_id'],
    ['order', 'purchase', {}, 'data.order'],
    ['order', 'return', { order: null }, 'data.order'],
  ])('%s %s without what it needs names the field', (type, action, data, field) => {
    expect(standardEventProblems(type, action, data)).toEqual([
      { field, reason: expect.stringContaining('required') },
    ]);
  });

  it('says "an" before a vowel and "a" before a consonant', () => {
    expect(standardEventProblems('order', 'purchase', {})[0]!.reason).toBe(
      'is required for an order purchase event',
    );
    expect(standardEventProblems('product', 'detail', {})[0]!.reason).toBe(
      'is required for a product detail event',
    );
  });

  it('a product event may name only product_id', () => {
    expect(standardEventProblems('product', 'detail', { product_id: 'p' })).toEqual([]);
  });

  it('refuses an order event with an action that is not an order action', () => {
    for (const action of ['', 'ship', 'Purchase']) {
      expect(standardEventProblems('order', action, { order: { order_id: 'o' } })).toEqual([
        { field: 'action', reason: expect.stringContaining('purchase, return, refund, cancel') },
      ]);
    }
  });

  it('accepts custom types and custom actions of standard types with any fields', () => {
    expect(isStandardEvent('wishlist', 'add')).toBe(false);
    expect(standardEventProblems('wishlist', 'add', {})).toEqual([]);
    expect(standardEventProblems('product', 'compare', {})).toEqual([]);
    expect(standardEventProblems('pageview', 'custom', {})).toEqual([]);
    expect(standardEventProblems('account', '', {})).toEqual([]);
  });
});
