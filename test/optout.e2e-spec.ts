import { readFileSync } from 'node:fs';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { StoreChecks } from './support/store-checks.js';
import { type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { completedExport } from './support/exports.js';
import { postWithKey } from './support/api-calls.js';
import { expectTooManyRequests } from './support/answers.js';

interface OptOutBody {
  title: string;
  status: number;
  timestamp: string;
  optout: {
    id: string;
    requester: string;
    customers: number;
    identifiers: { kind: string; value: string }[];
    redaction: string;
  };
}

const REDACTED = { opted_in: false };

/** Compliance opt-out on both wirings (spec "Compliance opt-out", consent table, errors, limits). */
describe.each(WIRINGS)('compliance opt-out (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;
  const store = new StoreChecks(() => ({ platform: p, account: acc.id }));

  beforeAll(async () => ({ p, acc } = await startWithAccount(start, 'optout')), 60_000);
  afterAll(() => p.close(), 30_000);

  const optout = (body: unknown, key = acc.privateKey) => postWithKey(p, key, '/v3/optout', body);
  const profile = (attributes: Record<string, unknown>) =>
    postWithKey(p, acc.publicKey, '/v3/profiles', { attributes });
  const event = (identifiers: Record<string, string>) =>
    postWithKey(p, acc.publicKey, '/v3/events', { type: 'account', action: 'login', identifiers });
  const get = (query: string) => p.http().get(`/v3/profiles?${query}`).set('x-api-key', acc.privateKey);
  const attributesOf = async (query: string): Promise<Record<string, unknown>> => {
    const res = await get(query);
    expect(res.status).toBe(200);
    return (res.body as { attributes: Record<string, unknown> }).attributes;
  };
  /** Sends a profile and waits until the API reads it back. */
  const seed = async (attributes: Record<string, unknown>, query: string) => {
    expect((await profile(attributes)).status).toBe(202);
    await eventually(async () => expect(await attributesOf(query)).toMatchObject(attributes));
  };
  const accepted = async (body: Record<string, unknown>): Promise<OptOutBody['optout']> => {
    const res = await optout(body);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      title: 'Accepted',
      status: 202,
      timestamp: expect.any(String),
      optout: {
        id: res.headers['z-request-id'],
        requester: body.requester,
        customers: expect.any(Number),
        identifiers: expect.any(Array),
        redaction: 'accepted',
      },
    });
    return (res.body as OptOutBody).optout;
  };
  const sorted = (ids: { kind: string; value: string }[]) =>
    [...ids].sort((a, b) => `${a.kind}:${a.value}`.localeCompare(`${b.kind}:${b.value}`));

  describe('400 cases (spec "Errors")', () => {
    it.each([
      ['requester missing', { email: 'a@x.com' }, [{ field: 'requester', reason: 'is required' }]],
      [
        'requester empty',
        { requester: '', email: 'a@x.com' },
        [{ field: 'requester', reason: 'must not be empty' }],
      ],
      [
        'requester blank',
        { requester: '  ', email: 'a@x.com' },
        [{ field: 'requester', reason: 'must not be empty' }],
      ],
      [
        'requester not a string',
        { requester: 7, email: 'a@x.com' },
        [{ field: 'requester', reason: 'must be a string' }],
      ],
      [
        'none of email, phone, vuid',
        { requester: 'dpo@x.com' },
        [{ field: ['email', 'phone', 'vuid'], reason: 'one of email, phone or vuid is required' }],
      ],
      [
        'an email that is none',
        { requester: 'dpo@x.com', email: 'nope' },
        [{ field: 'email', reason: 'must be an email address' }],
      ],
      [
        'an empty phone',
        { requester: 'dpo@x.com', phone: '' },
        [{ field: 'phone', reason: 'must not be empty' }],
      ],
      [
        'everything at once',
        {},
        [
          { field: 'requester', reason: 'is required' },
          { field: ['email', 'phone', 'vuid'], reason: 'one of email, phone or vuid is required' },
        ],
      ],
    ])('%s', async (_case, body, invalids) => {
      const res = await optout(body);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        title: 'Bad Request',
        status: 400,
        timestamp: expect.any(String),
        detail: { invalids },
      });
    });

    it('needs the private key (403 with the public key)', async () => {
      expect((await optout({ requester: 'dpo@x.com', email: 'a@x.com' }, acc.publicKey)).status).toBe(403);
    });
  });

  it('allows 1 request a second per account: the second within the second gets 429 with headers', async () => {
    const limited = await p.createAccount('compliance', {}); // the spec's default rates
    // An unlimited request first, so the key is known to the API and the pair below measures the limit only.
    const warm = await postWithKey(p, limited.privateKey, '/v3/events', {
      type: 'warm',
      identifiers: { vuid: 'warm' },
    });
    expect(warm.status).toBe(202);
    const body = { requester: 'dpo@x.com', email: 'edge@x.com' };
    // Until the first 429, by count: a run slow enough for a token to come back needs only more requests.
    const answers: Awaited<ReturnType<typeof optout>>[] = [];
    while (answers.at(-1)?.status !== 429 && answers.length < 20) {
      answers.push(await optout(body, limited.privateKey));
    }
    const [first] = answers;
    const second = answers.at(-1)!;
    expect(first!.status).toBe(202);
    // Each request that passed found the one token and left none: the bucket holds one request.
    for (const passed of answers.slice(0, -1)) {
      expect(passed.status).toBe(202);
      expect(passed.headers['ratelimit-limit']).toBe('1');
      expect(passed.headers['ratelimit-remaining']).toBe('0');
    }
    expectTooManyRequests(second, 1, 'compliance');
  });

  it('by email: every identifier pooled, the profile redacted; later events and updates attach without restoring data', async () => {
    await seed(
      { email: 'Ada@X.com', name: 'Ada', phone: '+44 20 1234', city: 'London', opted_in: true },
      'email=ada@x.com',
    );
    expect((await event({ email: 'ada@x.com', vuid: 'ada-phone' })).status).toBe(202);
    await eventually(async () => expect(await attributesOf('vuid=ada-phone')).toMatchObject({ name: 'Ada' }));

    const done = await accepted({ requester: 'dpo@x.com', email: 'ADA@x.com' });
    expect(done.customers).toBe(1);
    expect(sorted(done.identifiers)).toEqual([
      { kind: 'email', value: 'ada@x.com' },
      { kind: 'vuid', value: 'ada-phone' },
    ]);
    await eventually(async () => expect(await attributesOf('email=ada@x.com')).toEqual(REDACTED));
    expect(await attributesOf('vuid=ada-phone')).toEqual(REDACTED);

    // Later data for the same person is accepted and attaches to the redacted profile.
    expect((await event({ email: 'ada@x.com', vuid: 'ada-laptop' })).status).toBe(202);
    expect((await profile({ email: 'ada@x.com', name: 'Ada Again', city: 'Paris' })).status).toBe(202);
    await eventually(async () => expect(await attributesOf('vuid=ada-laptop')).toEqual(REDACTED));
    // The profile update is processed after the event: once a marker sent after it shows, it was too.
    expect((await event({ vuid: 'ada-laptop', email: 'ada@x.com' })).status).toBe(202);
    expect((await profile({ email: 'marker-ada@x.com' })).status).toBe(202);
    await eventually(async () => expect((await get('email=marker-ada@x.com')).status).toBe(200));
    expect(await attributesOf('email=ada@x.com')).toEqual(REDACTED);

    await store.check(async (query) => {
      const count = async (sql: string, params: Record<string, unknown> = {}) =>
        Number((await query<{ n: string }>(sql, params))[0]!.n);
      const [link] = await query<{ svc_id: string }>(
        "SELECT svc_id FROM {db}.identity_links WHERE kind = 'email' AND value = 'ada@x.com'",
      );
      const id = link!.svc_id;
      const personal = `SELECT count() AS n FROM {db}.customers %s WHERE svc_id = {id:String}
        AND (email IS NOT NULL OR name IS NOT NULL OR phone IS NOT NULL OR city IS NOT NULL OR NOT redacted)`;
      expect(await count(personal.replace('%s', ''), { id })).toBe(0);
      expect(await count(personal.replace('%s', 'FINAL'), { id })).toBe(0);
      // Older snapshots the engine has not merged away yet are redacted too (the count above reads them
      // all); how many are left depends on background merges (a restarted processor's, scaled out).
      expect(
        await count('SELECT count() AS n FROM {db}.customers WHERE svc_id = {id:String}', { id }),
      ).toBeGreaterThan(0);
      const audit = await query<Record<string, unknown>>(
        'SELECT requester, api_key, sent, customers, identifiers FROM {db}.optout_requests WHERE msg_id = {id:String}',
        { id: done.id },
      );
      expect(audit).toEqual([
        {
          requester: 'dpo@x.com',
          api_key: expect.stringMatching(/^private:/),
          sent: ['email:ada@x.com'],
          customers: [id],
          identifiers: expect.arrayContaining(['email:ada@x.com', 'vuid:ada-phone']),
        },
      ]);
      expect(
        await count("SELECT count() AS n FROM {db}.optout_pool WHERE value IN ('ada@x.com', 'ada-phone')"),
      ).toBe(2);
    });
  });

  it('by phone: an exact match only; a differently formatted phone matches nobody', async () => {
    await seed({ email: 'bo@x.com', name: 'Bo', phone: '+1 555 0100' }, 'email=bo@x.com');
    await seed({ email: 'cy@x.com', name: 'Cy', phone: '+15550100' }, 'email=cy@x.com');

    const none = await accepted({ requester: 'dpo@x.com', phone: '(555) 0100' });
    expect(none).toMatchObject({ customers: 0, identifiers: [] });
    const done = await accepted({ requester: 'dpo@x.com', phone: '+15550100' });
    expect(done.customers).toBe(1);
    expect(done.identifiers).toEqual([{ kind: 'email', value: 'cy@x.com' }]);
    await eventually(async () => expect(await attributesOf('email=cy@x.com')).toEqual(REDACTED));
    expect(await attributesOf('email=bo@x.com')).toMatchObject({ name: 'Bo', phone: '+1 555 0100' });
  });

  it('by vuid: the customer behind the cookie id, with its email', async () => {
    expect((await event({ vuid: 'dee-cookie', email: 'dee@x.com' })).status).toBe(202);
    await eventually(async () =>
      expect(await attributesOf('vuid=dee-cookie')).toEqual({ email: 'dee@x.com' }),
    );
    await seed({ email: 'dee@x.com', name: 'Dee', street1: '1 Main St' }, 'email=dee@x.com');

    const done = await accepted({ requester: 'dpo@x.com', vuid: 'dee-cookie' });
    expect(done.customers).toBe(1);
    expect(sorted(done.identifiers)).toEqual([
      { kind: 'email', value: 'dee@x.com' },
      { kind: 'vuid', value: 'dee-cookie' },
    ]);
    await eventually(async () => expect(await attributesOf('email=dee@x.com')).toEqual(REDACTED));
  });

  it('with nothing matching: 202 with no customer, the identifiers pooled, and a later sign-up is born redacted', async () => {
    const done = await accepted({ requester: 'dpo@x.com', email: 'ghost@x.com', vuid: 'ghost-cookie' });
    expect(done.customers).toBe(0);
    expect(done.identifiers).toEqual([
      { kind: 'email', value: 'ghost@x.com' },
      { kind: 'vuid', value: 'ghost-cookie' },
    ]);
    // The opt-out is processed before anything sent after it.
    expect((await profile({ email: 'ghost@x.com', name: 'Ghost', phone: '000' })).status).toBe(202);
    await eventually(async () => expect(await attributesOf('email=ghost@x.com')).toEqual(REDACTED));
    const phone = await optout({ requester: 'dpo@x.com', phone: '000' });
    expect((phone.body as OptOutBody).optout.customers).toBe(0); // the phone never reached the profile
  });

  it('a redacted customer merged with another later: the survivor is redacted too', async () => {
    await seed({ email: 'fay@x.com', name: 'Fay', city: 'Rome' }, 'email=fay@x.com');
    expect((await event({ email: 'fay@x.com', vuid: 'fay-cookie' })).status).toBe(202);
    await seed({ email: 'eve@x.com', name: 'Eve' }, 'email=eve@x.com');
    await eventually(async () =>
      expect(await attributesOf('vuid=fay-cookie')).toMatchObject({ name: 'Fay' }),
    );
    expect((await accepted({ requester: 'dpo@x.com', email: 'eve@x.com' })).customers).toBe(1);
    await eventually(async () => expect(await attributesOf('email=eve@x.com')).toEqual(REDACTED));
    // One record joins both: Fay's customer is older and survives, and holds no personal data after.
    expect((await event({ vuid: 'fay-cookie', email: 'eve@x.com' })).status).toBe(202);
    await eventually(async () => expect(await attributesOf('email=fay@x.com')).toEqual(REDACTED));
    expect(await attributesOf('email=eve@x.com')).toEqual(REDACTED);
  });

  describe('redaction reaches every copy (spec "Compliance opt-out"; README API notes)', () => {
    const EMAIL = 'zoe.quartz@x.com';
    const ORDER = 'zoe-order-1';
    /** Every value of the person, each sent through at least one path below. */
    const PERSON = {
      email: EMAIL,
      phone: '+33 1 99 88 77',
      first_name: 'Zoequa',
      last_name: 'Quartzly',
      customer_id: 'zoe-cid-9731',
      vuid: 'zoe-vuid-4412',
      street1: '12 Quartzstrasse',
      city: 'Zoeburg',
      zip: '99731',
      pet_name: 'Biscuitzoe', // a custom customer field
      ua: 'ZoeAgent/7.1',
      mood: 'zoe-mood-secret', // a custom event field
      ship_address: '5 Zoe Road',
      bill_address: '6 Zoe Road',
      order_name: 'Zoe Q. Buyer',
      v2_mood: 'zoe-v2-mood', // a custom event field sent by /v2/events
    };
    /** Sent after the opt-out: accepted and stored, without the person's data. */
    const LATER = {
      ua: 'ZoeLaterAgent/8',
      ship_address: '9 Zoe Late Road',
      updated_address: '7 Zoe Update Road',
      name: 'Zoe Later',
    };
    const CONTROL = 'kim.control@x.com';

    const send = (path: string, body: unknown, key = acc.publicKey) => {
      const req = p.http().post(path).set('x-api-key', key);
      if (path.startsWith('/v2/')) req.set('svc-tracker-id', acc.publicKey);
      return req.send(body as object);
    };
    const purchase = (orderId: string, order: Record<string, unknown>) => ({
      type: 'order',
      action: 'purchase',
      identifiers: { customer_id: PERSON.customer_id },
      data: {
        order: {
          order_id: orderId,
          total: 20,
          items: [{ product_id: 'zp1', price: 20, quantity: 1 }],
          ...order,
        },
      },
    });

    /** Exports every object (no `objects`: all of them) and returns the text of every file. */
    const exportAll = async (): Promise<string> => {
      const exported = await completedExport(p, acc.privateKey, {}, 60_000);
      const manifest = exported.manifest();
      expect(new Set(manifest.files.map((f) => f.object))).toEqual(
        new Set(['customers', 'events', 'products', 'orders', 'line_items']),
      );
      return manifest.files.map((f) => readFileSync(exported.fileOf(f), 'utf8')).join('\n');
    };
    const found = (text: string, values: Record<string, string>) =>
      Object.entries(values).filter(([, v]) => text.toLowerCase().includes(v.toLowerCase()));

    it('writes the person through every path; after the opt-out no export, read or stored row shows them', async () => {
      for (const [object, name] of [
        ['customers', 'pet_name'],
        ['events', 'mood'],
      ])
        expect(
          (
            await send(
              `/v3/schema/objects/${object}/fields`,
              { name, type: 'string', display_name: name },
              acc.privateKey,
            )
          ).status,
        ).toBe(201);
      expect((await send('/v3/lists', { name: 'Zoe News' }, acc.privateKey)).status).toBe(201);

      const { email, phone, first_name, last_name, customer_id, vuid, street1, city, zip, pet_name } = PERSON;
      expect(
        (await profile({ email, phone, first_name, last_name, customer_id, street1, city, zip, pet_name }))
          .status,
      ).toBe(202);
      expect((await profile({ email: CONTROL, first_name: 'Kim' })).status).toBe(202);
      expect(
        (
          await send('/v3/events', [
            {
              type: 'pageview',
              identifiers: { email, vuid },
              data: { page: '/zoe', ua: PERSON.ua, mood: PERSON.mood },
            },
            purchase(ORDER, {
              email,
              phone,
              name: PERSON.order_name,
              ship_address: PERSON.ship_address,
              bill_address: PERSON.bill_address,
            }),
          ])
        ).status,
      ).toBe(202);
      expect((await send('/v2/entities', { type: 'customer', data: { email, city, phone } })).status).toBe(
        202,
      );
      expect(
        (await send('/v2/events', { type: 'pageview', data: { vuid, page: '/v2', mood: PERSON.v2_mood } }))
          .status,
      ).toBe(202);
      expect(
        (await send('/v3/lists/subscriptions', { list_id: 'zoe_news', email, subscribed: true })).status,
      ).toBe(200);
      expect(
        (
          await send('/v3/consent', {
            identifier_field_name: 'email',
            identifier_value: email,
            consent: true,
          })
        ).status,
      ).toBe(202);

      // Every value reached the exports: the check after the opt-out looks where they were.
      let before = '';
      await eventually(async () => {
        before = await exportAll();
        return found(before, PERSON).length === Object.keys(PERSON).length && before.includes(CONTROL);
      }, 90_000).catch(() => {
        const all = new Set(found(before, PERSON).map(([k]) => k));
        throw new Error(
          `never exported: ${Object.keys(PERSON)
            .filter((k) => !all.has(k))
            .join(', ')}`,
        );
      });

      const done = await accepted({ requester: 'dpo@x.com', email });
      expect(done.customers).toBe(1);
      await eventually(async () =>
        expect(await attributesOf(`customer_id=${customer_id}`)).toEqual(REDACTED),
      );

      // Sent after the opt-out: a new event, a new order, a profile update and an update of the old
      // order naming no customer. They are stored, without the person's data.
      expect(
        (
          await send('/v3/events', {
            type: 'pageview',
            identifiers: { email },
            data: { page: '/later', ua: LATER.ua },
          })
        ).status,
      ).toBe(202);
      expect(
        (await send('/v3/events', purchase('zoe-order-2', { ship_address: LATER.ship_address }))).status,
      ).toBe(202);
      expect((await profile({ email, name: LATER.name })).status).toBe(202);
      expect(
        (
          await send('/v2/entities', {
            type: 'order',
            data: { order_id: ORDER, ship_address: LATER.updated_address },
          })
        ).status,
      ).toBe(202);
      expect((await profile({ email: 'marker-zoe@x.com' })).status).toBe(202);
      await eventually(async () => expect((await get('email=marker-zoe@x.com')).status).toBe(200));

      const values = { ...PERSON, ...LATER };
      const after = await eventually(async () => {
        const text = await exportAll();
        const left = found(text, values);
        if (left.length || !text.includes('zoe-order-2'))
          throw new Error(`still exported: ${JSON.stringify(left)}`);
        return text;
      }, 60_000);
      expect(found(after, values)).toEqual([]);
      expect(after).toContain(CONTROL); // others are exported as they were
      expect(after).toContain(ORDER); // the order, its amounts and items are kept

      for (const query of [`email=${email}`, `customer_id=${customer_id}`, `vuid=${vuid}`])
        expect(await attributesOf(query)).toEqual(REDACTED);
      const subscriptions = await p
        .http()
        .get(`/v3/lists/subscriptions?email=${email}`)
        .set('x-api-key', acc.privateKey);
      expect(subscriptions.status).toBe(200);
      expect(subscriptions.body.opted_in).toBe(false);
      // The caller's own identifier is echoed; nothing else of the person is.
      expect(found(JSON.stringify(subscriptions.body), { ...values, email: 'never' })).toEqual([]);

      await store.check(async (query) => {
        // Every table that can hold the person, whole, as text.
        for (const table of [
          'customers',
          'events',
          'line_items',
          'orders',
          'order_changes',
          'consent_history',
          'identity_merges',
          'identity_conflicts',
        ]) {
          const rows = await query<Record<string, unknown>>(`SELECT * FROM {db}.${table}`);
          expect([table, found(JSON.stringify(rows), values)]).toEqual([table, []]);
        }
        // The client's address the API sets as `ip` is cleared too (the control's is the same one).
        const [link] = await query<{ svc_id: string }>(
          'SELECT svc_id FROM {db}.identity_links WHERE kind = {kind:String} AND value = {value:String}',
          { kind: 'email', value: EMAIL },
        );
        const events = await query<{ ip: string | null; ua: string | null; identifiers: object }>(
          'SELECT ip, ua, identifiers FROM {db}.events WHERE svc_id = {id:String}',
          { id: link!.svc_id },
        );
        expect(events.length).toBeGreaterThan(3);
        for (const e of events) expect(e).toEqual({ ip: null, ua: null, identifiers: {} });
        const [orders] = await query<{ n: string }>(
          "SELECT count() AS n FROM {db}.orders FINAL WHERE order_id IN ('zoe-order-1', 'zoe-order-2') AND total = 20",
        );
        expect(Number(orders!.n)).toBe(2);
      });
    }, 240_000);
  });

  it('holds in the store what the tests above checked there (scaled out: read once, here)', async () => {
    const ran = await store.runKept();
    if (!(p instanceof EmbeddedPlatform)) expect(ran).toBe(2);
  }, 120_000);
});
