import {
  DEFAULT_CHANNEL,
  EVENT_COLUMN_FIELDS,
  EVENT_DATA_FIELDS,
  normalizeEvent,
  type EventInput,
  type EventRecord,
} from './events.js';

const NOW = Date.UTC(2024, 5, 1, 12, 0, 0);

function normalized(input: EventInput, now = NOW): EventRecord {
  const result = normalizeEvent(input, now);
  if ('invalidTs' in result) throw new Error('unexpected invalid ts');
  return result;
}

describe('EVENT_DATA_FIELDS', () => {
  it('types the fields of the spec event table', () => {
    expect(EVENT_DATA_FIELDS.ts).toBe('timestamp');
    expect(EVENT_DATA_FIELDS.days_since_last_visit).toBe('integer');
    expect(EVENT_DATA_FIELDS.landing).toBe('boolean');
    expect(EVENT_DATA_FIELDS.order).toBe('object');
    for (const f of [
      'product_id',
      'category',
      'channel',
      'ua',
      'ip',
      'title',
      'hostname',
      'page',
      'source',
      'medium',
      'campaign',
      'content',
      'keywords',
      'language',
      'character_set',
      'referrer',
      'search_term',
      'filter_field',
      'filter_value',
      'sort_direction',
      'sort_field',
    ]) {
      expect(EVENT_DATA_FIELDS[f]).toBe('string');
    }
  });

  it('gives every field but ts, channel and order its own column', () => {
    expect(EVENT_COLUMN_FIELDS).not.toContain('ts');
    expect(EVENT_COLUMN_FIELDS).not.toContain('channel');
    expect(EVENT_COLUMN_FIELDS).not.toContain('order');
    expect(EVENT_COLUMN_FIELDS).toHaveLength(Object.keys(EVENT_DATA_FIELDS).length - 3);
    expect(EVENT_COLUMN_FIELDS).toEqual(expect.arrayContaining(['page', 'product_id', 'landing']));
  });
});

describe('normalizeEvent', () => {
  it('applies the defaults: ts now, channel offline, no action', () => {
    const record = normalized({ type: 'pageview', identifiers: { vuid: 'v1' } });
    expect(record).toEqual({
      type: 'pageview',
      action: '',
      ts: NOW,
      channel: 'offline',
      identifiers: { vuid: 'v1' },
      data: {},
    });
    expect(DEFAULT_CHANNEL).toBe('offline');
    expect(record).not.toHaveProperty('order');
    expect(record).not.toHaveProperty('dropped');
  });

  it('keeps the type, action and channel sent', () => {
    const record = normalized({
      type: 'product',
      action: 'add_to_cart',
      identifiers: { email: 'a@b.co' },
      data: { channel: 'web', product_id: 'p1' },
    });
    expect(record.type).toBe('product');
    expect(record.action).toBe('add_to_cart');
    expect(record.channel).toBe('web');
    expect(record.data).toEqual({ product_id: 'p1' });
  });

  it('reads ts as epoch seconds (number or string) or ISO 8601, in milliseconds', () => {
    expect(normalized({ type: 't', identifiers: {}, data: { ts: 1_700_000_000 } }).ts).toBe(
      1_700_000_000_000,
    );
    expect(normalized({ type: 't', identifiers: {}, data: { ts: '1700000000' } }).ts).toBe(1_700_000_000_000);
    expect(normalized({ type: 't', identifiers: {}, data: { ts: '2024-01-01' } }).ts).toBe(
      Date.UTC(2024, 0, 1),
    );
    expect(normalized({ type: 't', identifiers: {}, data: { ts: '2024-01-01T10:00:00+01:00' } }).ts).toBe(
      Date.UTC(2024, 0, 1, 9),
    );
  });

  it('keeps ts out of data', () => {
    const record = normalized({ type: 't', identifiers: {}, data: { ts: 1, page: '/' } });
    expect(record.data).toEqual({ page: '/' });
  });

  it('reports a ts it cannot read', () => {
    expect(normalizeEvent({ type: 't', identifiers: {}, data: { ts: 'soon' } }, NOW)).toEqual({
      invalidTs: true,
    });
    expect(normalizeEvent({ type: 't', identifiers: {}, data: { ts: true } }, NOW)).toEqual({
      invalidTs: true,
    });
  });

  it('treats null values as absent', () => {
    const record = normalized({
      type: 't',
      identifiers: {},
      data: { ts: null, channel: null, page: null, order: null, landing: undefined },
    });
    expect(record.ts).toBe(NOW);
    expect(record.channel).toBe('offline');
    expect(record.data).toEqual({});
    expect(record).not.toHaveProperty('order');
    expect(record).not.toHaveProperty('dropped');
  });

  it('keeps typed data values as they are', () => {
    const record = normalized({
      type: 't',
      identifiers: {},
      data: { page: '/cart', days_since_last_visit: 3, landing: false, search_term: '' },
    });
    expect(record.data).toEqual({ page: '/cart', days_since_last_visit: 3, landing: false, search_term: '' });
  });

  it('moves the order object out of data', () => {
    const order = { order_id: 'o1', total: 10, items: [{ product_id: 'p1', price: 10, quantity: 1 }] };
    const record = normalized({
      type: 'order',
      action: 'purchase',
      identifiers: { email: 'a@b.co' },
      data: { order },
    });
    expect(record.order).toEqual(order);
    expect(record.data).toEqual({});
  });

  it('drops fields the event table does not list and names them', () => {
    const record = normalized({
      type: 't',
      identifiers: {},
      data: { page: '/', favourite_colour: 'red', Page: '/x', nothing: null },
    });
    expect(record.data).toEqual({ page: '/' });
    expect(record.dropped).toEqual(['favourite_colour', 'Page']);
  });

  // Regression: the field table is a plain object, so names inherited from Object.prototype
  // ('constructor', 'toString', ...) look like defined fields and are kept in data instead of being dropped.
  it('drops fields named like Object.prototype members', () => {
    const record = normalized({ type: 't', identifiers: {}, data: { constructor: 'x', toString: 'y' } });
    expect(record.data).toEqual({});
    expect(record.dropped).toEqual(['constructor', 'toString']);
  });

  it('collects identifiers normalized, without junk or non-identifier fields', () => {
    const record = normalized({
      type: 't',
      identifiers: {
        email: ' A@B.CO ',
        customer_id: 'null',
        vuid: 'v1',
        ios_push_tokens: ['t1', 't2'],
        foo: 'bar',
      },
    });
    expect(record.identifiers).toEqual({ email: 'a@b.co', vuid: 'v1', ios_push_tokens: ['t1', 't2'] });
  });

  it('does not change its input', () => {
    const input: EventInput = {
      type: 't',
      identifiers: { email: 'A@B.co' },
      data: { ts: '2024-01-01', x: 1 },
    };
    const copy = structuredClone(input);
    normalizeEvent(input, NOW);
    expect(input).toEqual(copy);
  });

  it('keeps data.order with the order and item fields the spec defines, naming the dropped ones', () => {
    const record = normalized({
      type: 'order',
      action: 'purchase',
      identifiers: {},
      data: {
        order: { order_id: 'o1', subtotal: 5, wrap: true, items: [{ product_id: 'p', colour: 'red' }] },
      },
    });
    expect(record.order).toEqual({ order_id: 'o1', subtotal: 5, items: [{ product_id: 'p' }] });
    expect(record.dropped).toEqual(['order.wrap', 'order.items.colour']);
  });

  it('reports an order ts it cannot read on data.order.ts', () => {
    expect(
      normalizeEvent({ type: 'order', identifiers: {}, data: { order: { order_id: 'o', ts: 'soon' } } }, NOW),
    ).toEqual({ invalidTs: true, field: 'data.order.ts' });
  });
});
