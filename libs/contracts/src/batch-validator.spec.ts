import { BatchValidator } from './batch-validator.js';
import { ApiError, type Invalid } from './errors.js';
import { MAX_BATCH, MAX_STRING, eventSchema, profileSchema } from './schemas.js';

interface EventIn {
  type: string;
  action?: string | null;
  identifiers: Record<string, unknown>;
  data?: Record<string, unknown>;
}

interface ProfileIn {
  attributes: Record<string, unknown>;
}

/** A simple rule: a record of type `refuse` is refused; others become `{index, type, tag}`. */
function eventRule(
  record: EventIn,
  index: number,
  tag: string,
): { index: number; type: string; tag: string } | Invalid[] {
  if (record.type === 'refuse')
    return [{ event: index, field: 'type', reason: 'refused by the rule', message: expect.any(String) }];
  return { index, type: record.type, tag };
}

const events = new BatchValidator<EventIn, { index: number; type: string; tag: string }, string>(
  eventSchema,
  'event',
  eventRule,
);
const profiles = new BatchValidator<ProfileIn, Record<string, unknown>>(
  profileSchema,
  'profile',
  (p) => p.attributes,
);

const event = (extra: Partial<EventIn> = {}): EventIn => ({
  type: 'pageview',
  identifiers: { vuid: 'v1' },
  ...extra,
});
const many = (n: number): EventIn[] => Array.from({ length: n }, () => event());

/** The ApiError a call throws; fails the test when it throws nothing or something else. */
function apiError(call: () => unknown): ApiError {
  try {
    call();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error('expected an ApiError, nothing was thrown');
}

function invalidsOf(call: () => unknown): Invalid[] {
  const err = apiError(call);
  expect(err.status).toBe(400);
  expect(err.detail).toHaveProperty('invalids');
  return (err.detail as { invalids: Invalid[] }).invalids;
}

describe('BatchValidator', () => {
  describe('batch size', () => {
    it('accepts a single object as a batch of one', () => {
      expect(events.parse(event({ type: 'solo' }), 'ctx')).toEqual([{ index: 0, type: 'solo', tag: 'ctx' }]);
    });

    it('accepts an array of one', () => {
      expect(events.parse([event()], 'ctx')).toHaveLength(1);
    });

    it(`accepts exactly ${MAX_BATCH} records, in order`, () => {
      expect(MAX_BATCH).toBe(1000);
      const out = events.parse(many(1000), 'ctx');
      expect(out).toHaveLength(1000);
      expect(out.map((o) => o.index)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    });

    it('rejects 1001 records with one invalid naming the body', () => {
      const invalids = invalidsOf(() => events.parse(many(1001), 'ctx'));
      expect(invalids).toHaveLength(1);
      expect(invalids[0]).toMatchObject({ field: 'body' });
      expect(invalids[0]!.reason).toContain('1001');
      expect(invalids[0]!.reason).toContain('1000 events');
      expect(invalids[0]).not.toHaveProperty('event');
    });

    it('rejects an empty array', () => {
      const invalids = invalidsOf(() => events.parse([], 'ctx'));
      expect(invalids).toEqual([{ field: 'body', reason: expect.stringContaining('holds 0') }]);
    });

    it('names the records of the validator in the reason', () => {
      const invalids = invalidsOf(() => profiles.parse([], undefined));
      expect(invalids[0]!.reason).toContain('profiles');
    });

    it('rejects an oversized batch before looking at its records', () => {
      const seen: unknown[] = [];
      const v = new BatchValidator<EventIn, EventIn>(eventSchema, 'event', (r) => (seen.push(r), r));
      const body = [...many(1000), { nonsense: true }];
      expect(invalidsOf(() => v.parse(body, undefined))).toEqual([
        { field: 'body', reason: expect.any(String) },
      ]);
      expect(seen).toHaveLength(0);
    });
  });

  describe('string length', () => {
    const exactly = 'x'.repeat(MAX_STRING);
    const over = 'x'.repeat(MAX_STRING + 1);

    it('allows 1024 characters in a data field', () => {
      expect(MAX_STRING).toBe(1024);
      expect(events.parse(event({ data: { page: exactly } }), 'ctx')).toHaveLength(1);
    });

    it('rejects 1025 characters in a data field, naming the field path and the record index', () => {
      const body = [event(), event(), event({ data: { page: over } })];
      expect(invalidsOf(() => events.parse(body, 'ctx'))).toEqual([
        {
          event: 2,
          field: 'data.page',
          reason: 'must NOT have more than 1024 characters',
          message: expect.any(String),
        },
      ]);
    });

    it('counts characters, not UTF-16 code units', () => {
      expect(events.parse(event({ data: { page: '😀'.repeat(MAX_STRING) } }), 'ctx')).toHaveLength(1);
      expect(
        invalidsOf(() => events.parse(event({ data: { page: '😀'.repeat(MAX_STRING + 1) } }), 'ctx')),
      ).toEqual([{ event: 0, field: 'data.page', reason: expect.any(String), message: expect.any(String) }]);
    });

    it.each([
      ['type', (s: string) => event({ type: s })],
      ['action', (s: string) => event({ action: s })],
      ['identifiers.email', (s: string) => event({ identifiers: { email: s } })],
      ['data.referrer', (s: string) => event({ data: { referrer: s } })],
    ])('limits %s to 1024 characters', (field, make) => {
      expect(events.parse(make(exactly), 'ctx')).toHaveLength(1);
      expect(invalidsOf(() => events.parse([make(over)], 'ctx'))).toEqual([
        { event: 0, field, reason: expect.stringContaining('1024'), message: expect.any(String) },
      ]);
    });

    it.each(['attributes.city', 'attributes.email', 'attributes.vuid', 'attributes.svc_alias_cart'])(
      'limits profile %s to 1024 characters',
      (path) => {
        const name = path.split('.')[1]!;
        expect(profiles.parse({ attributes: { [name]: exactly } }, undefined)).toHaveLength(1);
        expect(invalidsOf(() => profiles.parse([{ attributes: { [name]: over } }], undefined))).toEqual([
          { event: 0, field: path, reason: expect.stringContaining('1024'), message: expect.any(String) },
        ]);
      },
    );

    it('limits each push token and the number of push tokens', () => {
      const tokens = (n: number, s = 't'): string[] => Array.from({ length: n }, () => s);
      expect(
        profiles.parse({ attributes: { ios_push_tokens: tokens(100, exactly) } }, undefined),
      ).toHaveLength(1);
      expect(
        invalidsOf(() => profiles.parse({ attributes: { ios_push_tokens: tokens(101) } }, undefined)),
      ).toEqual([
        {
          event: 0,
          field: 'attributes.ios_push_tokens',
          reason: expect.any(String),
          message: expect.any(String),
        },
      ]);
      expect(
        invalidsOf(() => profiles.parse({ attributes: { ios_push_tokens: ['ok', over] } }, undefined)),
      ).toEqual(
        expect.arrayContaining([
          {
            event: 0,
            field: 'attributes.ios_push_tokens.1',
            reason: expect.stringContaining('1024'),
            message: expect.any(String),
          },
        ]),
      );
    });
  });

  describe('types', () => {
    it('reports one invalid per wrongly typed field', () => {
      const body = event({
        type: 5 as unknown as string,
        identifiers: { email: 7 },
        data: { page: 7, landing: 'yes', days_since_last_visit: 1.5, order: 'o1', ts: true },
      });
      const invalids = invalidsOf(() => events.parse(body, 'ctx'));
      expect(invalids).toHaveLength(7);
      expect(invalids).toEqual(
        expect.arrayContaining([
          { event: 0, field: 'type', reason: 'must be string', message: expect.any(String) },
          { event: 0, field: 'identifiers.email', reason: expect.any(String), message: expect.any(String) },
          { event: 0, field: 'data.page', reason: 'must be string', message: expect.any(String) },
          {
            event: 0,
            field: 'data.landing',
            reason: 'must be one of 0, 1, true, false',
            message: expect.any(String),
          },
          {
            event: 0,
            field: 'data.days_since_last_visit',
            reason: 'must be integer',
            message: expect.any(String),
          },
          { event: 0, field: 'data.order', reason: 'must be object', message: expect.any(String) },
          { event: 0, field: 'data.ts', reason: expect.any(String), message: expect.any(String) },
        ]),
      );
    });

    it('refuses an integer beyond the exact range, which the store could not read', () => {
      for (const days of [1.2345678901234568e29, -(2 ** 53)]) {
        expect(
          invalidsOf(() => events.parse(event({ data: { days_since_last_visit: days } }), 'ctx')),
        ).toEqual([
          {
            event: 0,
            field: 'data.days_since_last_visit',
            reason: expect.stringMatching(/^must be [<>]= -?9007199254740991$/),
            message:
              'record 0: data.days_since_last_visit ' +
              String(days > 0 ? 'must be <= ' : 'must be >= -') +
              '9007199254740991',
          },
        ]);
      }
      expect(events.parse(event({ data: { days_since_last_visit: 2 ** 53 - 1 } }), 'ctx')).toHaveLength(1);
    });

    it('reports wrongly typed profile attributes', () => {
      const invalids = invalidsOf(() =>
        profiles.parse({ attributes: { opted_in: 'yes', city: 3, email: ['a@b.co'] } }, undefined),
      );
      expect(invalids).toHaveLength(3);
      expect(invalids).toEqual(
        expect.arrayContaining([
          {
            event: 0,
            field: 'attributes.opted_in',
            reason: 'must be one of 0, 1, true, false',
            message: expect.any(String),
          },
          { event: 0, field: 'attributes.city', reason: 'must be string', message: expect.any(String) },
          { event: 0, field: 'attributes.email', reason: 'must be string', message: expect.any(String) },
        ]),
      );
    });

    it('rejects a body that is not an object', () => {
      for (const body of [null, 'text', 42, [event(), 'text']]) {
        const index = Array.isArray(body) ? 1 : 0;
        expect(invalidsOf(() => events.parse(body, 'ctx'))).toEqual([
          { event: index, field: 'body', reason: 'must be object', message: expect.any(String) },
        ]);
      }
    });

    it('rejects an empty type', () => {
      expect(invalidsOf(() => events.parse(event({ type: '' }), 'ctx'))).toEqual([
        { event: 0, field: 'type', reason: expect.any(String), message: expect.any(String) },
      ]);
    });

    it('accepts null for every optional field (every type allows null)', () => {
      const body = event({
        action: null,
        identifiers: { email: null, vuid: 'v1' },
        data: { page: null, landing: null, days_since_last_visit: null, ts: null, order: null },
      });
      expect(events.parse(body, 'ctx')).toHaveLength(1);
      expect(
        profiles.parse({ attributes: { city: null, opted_in: null, vuid: null } }, undefined),
      ).toHaveLength(1);
    });

    it('lets fields the schema does not know through to the rule', () => {
      expect(events.parse(event({ data: { favourite: { deep: [1] } } }), 'ctx')).toHaveLength(1);
      expect(profiles.parse({ attributes: { loyalty_tier: 3 } }, undefined)).toEqual([{ loyalty_tier: 3 }]);
    });
  });

  describe('required fields', () => {
    it('names each missing field', () => {
      expect(invalidsOf(() => events.parse({}, 'ctx'))).toEqual(
        expect.arrayContaining([
          { event: 0, field: 'type', reason: 'is required', message: expect.any(String) },
          { event: 0, field: 'identifiers', reason: 'is required', message: expect.any(String) },
        ]),
      );
      expect(invalidsOf(() => events.parse([event(), { type: 'x' }], 'ctx'))).toEqual([
        { event: 1, field: 'identifiers', reason: 'is required', message: expect.any(String) },
      ]);
      expect(invalidsOf(() => profiles.parse({ email: 'a@b.co' }, undefined))).toEqual([
        { event: 0, field: 'attributes', reason: 'is required', message: expect.any(String) },
      ]);
    });

    it('names a nested missing field by its path', () => {
      const v = new BatchValidator<unknown, unknown>(
        { type: 'object', properties: { order: { type: 'object', required: ['order_id'] } } },
        'order',
        (r) => r,
      );
      expect(invalidsOf(() => v.parse({ order: {} }, undefined))).toEqual([
        { event: 0, field: 'order.order_id', reason: 'is required', message: expect.any(String) },
      ]);
    });
  });

  describe('the rule', () => {
    it('receives each schema-valid record with its index and the context', () => {
      const v = new BatchValidator<EventIn, unknown, number>(eventSchema, 'event', (r, i, c) => ({
        type: r.type,
        i,
        c,
      }));
      expect(v.parse([event({ type: 'a' }), event({ type: 'b' })], 7)).toEqual([
        { type: 'a', i: 0, c: 7 },
        { type: 'b', i: 1, c: 7 },
      ]);
    });

    it('is not called for a record the schema rejects', () => {
      const seen: EventIn[] = [];
      const v = new BatchValidator<EventIn, EventIn>(eventSchema, 'event', (r) => (seen.push(r), r));
      expect(() => v.parse([event({ type: 'a' }), { type: 'b' }], undefined)).toThrow(ApiError);
      expect(seen).toEqual([event({ type: 'a' })]);
    });

    it('rejects the whole batch with the invalids of the rule and of the schema together', () => {
      const body = [
        event(),
        event({ type: 'refuse' }),
        event({ data: { page: 1 } }),
        event({ type: 'refuse' }),
      ];
      const invalids = invalidsOf(() => events.parse(body, 'ctx'));
      expect(invalids).toEqual([
        { event: 1, field: 'type', reason: 'refused by the rule', message: expect.any(String) },
        { event: 2, field: 'data.page', reason: 'must be string', message: expect.any(String) },
        { event: 3, field: 'type', reason: 'refused by the rule', message: expect.any(String) },
      ]);
    });
  });

  it('produces the 400 envelope of the API', () => {
    const err = apiError(() => events.parse([], 'ctx'));
    const env = err.envelope(new Date(Date.UTC(2024, 0, 1)));
    expect(env).toEqual({
      title: 'Bad Request',
      status: 400,
      timestamp: '2024-01-01T00:00:00.000Z',
      detail: { invalids: [{ field: 'body', reason: expect.any(String) }] },
    });
  });
});

describe('numbers the store keeps exactly', () => {
  const fieldsOf = (body: unknown): string[] => {
    try {
      events.parse(body, 't');
    } catch (err) {
      if (err instanceof ApiError && 'invalids' in err.detail)
        return err.detail.invalids.map((i) => `${String(i.field)}: ${i.reason}`);
      throw err;
    }
    return [];
  };
  const order = (fields: Record<string, unknown>) =>
    event({ type: 'order', action: 'purchase', data: { order: { order_id: 'o1', ...fields } } });

  it('refuses infinite and NaN amounts (JSON 1e400 parses to Infinity)', () => {
    expect(fieldsOf(order({ total: Infinity }))).toEqual(['data.order.total: must be number']);
    expect(fieldsOf(order({ items: [{ price: -Infinity, quantity: NaN }] }))).toEqual([
      'data.order.items.0.price: must be number',
      'data.order.items.0.quantity: must be number',
    ]);
  });

  it('takes built-in amounts of any decimals within ±99,999,999,999.9999 (the 4-decimal rule is for custom fields)', () => {
    expect(
      fieldsOf(
        order({ total: 99_999_999_999.9999, subtotal: -99_999_999_999.9999, tax: 0.0001, discount: 3.14159 }),
      ),
    ).toEqual([]);
    expect(fieldsOf(order({ total: 100_000_000_000 }))).toEqual([
      'data.order.total: must be <= 99999999999.9999',
    ]);
  });

  it('reads a built-in boolean in every form of the data types table', () => {
    for (const landing of [true, 0, '1', 'false', 'TRUE'])
      expect(fieldsOf(event({ data: { landing } }))).toEqual([]);
    expect(fieldsOf(event({ data: { landing: 'yes' } }))).toEqual([
      'data.landing: must be one of 0, 1, true, false',
    ]);
  });

  it('refuses an array for an identifier other than push tokens', () => {
    expect(fieldsOf(event({ identifiers: { email: ['a@x.com', 'b@x.com'] } }))).toEqual([
      'identifiers.email: must be string',
    ]);
    expect(fieldsOf(event({ identifiers: { ios_push_tokens: ['t1', 't2'] } }))).toEqual([]);
  });

  it('takes integers a double holds exactly', () => {
    expect(fieldsOf(event({ data: { days_since_last_visit: Number.MAX_SAFE_INTEGER } }))).toEqual([]);
    expect(fieldsOf(event({ data: { days_since_last_visit: 2 ** 53 } }))).toEqual([
      'data.days_since_last_visit: must be <= 9007199254740991',
    ]);
    expect(fieldsOf(event({ data: { days_since_last_visit: 1e300 } }))).toHaveLength(1);
  });
});
