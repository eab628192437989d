import { readFileSync } from 'node:fs';
import {
  createForwardingEventProcessor,
  createInstance,
  createOdpManager,
  createStaticProjectConfigManager,
} from '@optimizely/optimizely-sdk';
import { SegmentEventCounts, type DigestedSegmentEventCounts } from '@cdp/segments';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { ScaledPlatform } from './support/scaled.js';
import { eventually } from './support/eventually.js';
import { postWithKey } from './support/api-calls.js';

const DAY = 86_400_000;
const CART_ABANDONERS = {
  id: 'cart_abandoners',
  name: 'Cart abandoners',
  description: 'added to cart, did not buy',
  definition: {
    events: [
      { type: 'product', action: 'add_to_cart', within_days: 7, min_count: 1 },
      { type: 'order', action: 'purchase', within_days: 7, max_count: 0 },
    ],
  },
};
const AUDIENCE_QUERY = (kind: string, value: string, subset = ['cart_abandoners', 'vips']) =>
  `query {customer(${kind} : "${value}") {audiences(subset: ${JSON.stringify(subset)}) {edges {node {name state}}}}}`;

/**
 * Segments (audiences) and `POST /v3/graphql` on the embedded wiring: the segments API and its
 * validation, evaluation (windows passing, merges carrying history), GraphQL's shape, keys, errors
 * and bounds, and Optimizely's own SDK end to end against a local datafile.
 */
// One wiring: the API's segments and GraphQL code is the same on both; what scaled out changes is the suite below.
describe('segments and GraphQL (embedded)', () => {
  let p: EmbeddedPlatform;
  let acc: TestAccount;
  const post = (path: string, body: unknown, key = acc.privateKey) => postWithKey(p, key, path, body);
  const graphql = (query: string, key = acc.publicKey) => post('/v3/graphql', { query }, key);
  const states = async (kind: string, value: string, subset?: string[]): Promise<Record<string, string>> => {
    const res = await graphql(AUDIENCE_QUERY(kind, value, subset));
    expect(res.status).toBe(200);
    const edges = (res.body.data.customer?.audiences.edges ?? []) as {
      node: { name: string; state: string };
    }[];
    return Object.fromEntries(edges.map((e) => [e.node.name, e.node.state]));
  };
  const event = (identifiers: Record<string, string>, type: string, action: string, ts: number) => ({
    type,
    action,
    identifiers,
    data: {
      ts: new Date(ts).toISOString(),
      ...(type === 'product' ? { product_id: 'p1' } : {}),
      ...(type === 'order' ? { order: { order_id: `o-${ts}`, total: 10 } } : {}),
    },
  });

  beforeAll(async () => {
    p = await EmbeddedPlatform.start();
    acc = await p.createAccount('segments');
    await p.app.listen({ port: 0, host: '127.0.0.1' });
  }, 60_000);
  afterAll(() => p?.close());

  it('keeps segments: create, list, read, replace, delete; checks definitions as exports check filters', async () => {
    expect((await post('/v3/segments', CART_ABANDONERS)).status).toBe(201);
    const vips = {
      id: 'vips',
      name: 'VIPs',
      definition: { customer: { and: [{ field: 'first_name', operator: 'IS NOT', value: null }] } },
    };
    const created = await post('/v3/segments', vips);
    expect(created.status).toBe(201);
    expect(created.body.segment.definition.customer.and[0].operator).toBe('is not');
    const twice = await post('/v3/segments', vips);
    expect(twice.status).toBe(400);
    expect(twice.body.detail.invalids[0]).toMatchObject({ field: 'id' });
    const list = await p.http().get('/v3/segments').set('x-api-key', acc.privateKey);
    expect(list.body.segments.map((s: { id: string }) => s.id)).toEqual(['cart_abandoners', 'vips']);
    expect((await p.http().get('/v3/segments').set('x-api-key', acc.publicKey)).status).toBe(403);

    const bad = async (body: unknown) => (await post('/v3/segments', body)).body;
    expect((await bad({ ...vips, id: 'Bad-Id' })).detail.invalids[0].field).toBe('id');
    const badOp = await bad({
      ...vips,
      id: 'x',
      definition: { customer: { field: 'email', operator: '~', value: 1 } },
    });
    expect(badOp.detail.invalids[0].field).toBe('definition.customer.operator');
    const unknownField = await post('/v3/segments', {
      ...vips,
      id: 'x',
      definition: { customer: { field: 'nope', operator: '=', value: 1 } },
    });
    expect(unknownField.status).toBe(404);
    const badWindow = await bad({
      ...vips,
      id: 'x',
      definition: { events: [{ type: 'product', within_days: 0 }] },
    });
    expect(badWindow.detail.invalids[0].field).toBe('definition.events');
    expect((await bad({ ...vips, id: 'x', definition: {} })).detail.invalids[0].field).toBe('definition');

    const replaced = await p
      .http()
      .put('/v3/segments/vips')
      .set('x-api-key', acc.privateKey)
      .send({ ...vips, id: undefined, name: 'Very important' });
    expect(replaced.body.segment.name).toBe('Very important');
    await post('/v3/segments', { ...vips, id: 'gone' });
    expect((await p.http().delete('/v3/segments/gone').set('x-api-key', acc.privateKey)).status).toBe(204);
    expect((await p.http().get('/v3/segments/gone').set('x-api-key', acc.privateKey)).status).toBe(404);
  });

  it('evaluates windows, profile filters and merges on every lookup', async () => {
    const now = Date.now();
    const res = await post(
      '/v3/events',
      [
        event({ email: 'recent@example.com' }, 'product', 'add_to_cart', now - 6 * DAY),
        event({ email: 'old@example.com' }, 'product', 'add_to_cart', now - 8 * DAY),
        event({ email: 'buyer@example.com' }, 'product', 'add_to_cart', now - DAY),
        event({ email: 'buyer@example.com' }, 'order', 'purchase', now - DAY / 2),
        event({ vuid: 'vuid_anon1' }, 'product', 'add_to_cart', now - DAY),
      ],
      acc.publicKey,
    );
    expect(res.status).toBe(202);
    await eventually(async () =>
      expect((await states('email', 'recent@example.com')).cart_abandoners).toBe('qualified'),
    );
    // An add-to-cart older than the window no longer counts; a purchase disqualifies.
    expect(await states('email', 'old@example.com')).toEqual({
      cart_abandoners: 'not_qualified',
      vips: 'not_qualified',
    });
    expect((await states('email', 'buyer@example.com')).cart_abandoners).toBe('not_qualified');

    // A profile update qualifies for the profile filter; a merge carries the anonymous history over.
    await post(
      '/v3/profiles',
      { attributes: { email: 'merged@example.com', first_name: 'Ada' } },
      acc.publicKey,
    );
    await eventually(async () =>
      expect((await states('email', 'merged@example.com')).vips).toBe('qualified'),
    );
    expect((await states('email', 'merged@example.com')).cart_abandoners).toBe('not_qualified');
    await post(
      '/v3/events',
      [event({ vuid: 'vuid_anon1', email: 'merged@example.com' }, 'page', 'view', now)],
      acc.publicKey,
    );
    await eventually(async () =>
      expect(await states('email', 'merged@example.com')).toEqual({
        cart_abandoners: 'qualified',
        vips: 'qualified',
      }),
    );
  });

  it("counts a segment's members in SQL as the per-customer lookups qualify them", async () => {
    const size = (id: string, key = acc.privateKey) =>
      p.http().get(`/v3/segments/${id}/size`).set('x-api-key', key);
    const emails = ['recent', 'old', 'buyer', 'merged'].map((n) => `${n}@example.com`);
    const qualified = async (segment: string) => {
      let n = 0;
      for (const email of emails) if ((await states('email', email, [segment]))[segment] === 'qualified') n++;
      return n;
    };
    // Order totals and `not` (NULL stays unknown under `not`, as in SQL: `not (first_name is not null)`).
    const spenders = {
      id: 'spenders',
      name: 'Spenders',
      definition: {
        customer: { not: { field: 'email', operator: 'like', value: 'old%' } },
        events: [{ type: 'order', action: 'purchase', within_days: 30, min_total: 10 }],
      },
    };
    const frugal = {
      id: 'frugal',
      name: 'Frugal strangers',
      definition: {
        customer: { not: { field: 'first_name', operator: 'is not', value: null } },
        events: [{ type: 'order', action: 'purchase', within_days: 30, max_total: 9.9999 }],
      },
    };
    for (const body of [spenders, frugal]) expect((await post('/v3/segments', body)).status).toBe(201);
    for (const id of ['cart_abandoners', 'vips', 'spenders', 'frugal']) {
      const res = await size(id);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ segment_id: id, customers: await qualified(id), as_of: expect.any(String) });
      expect(Date.parse(res.body.as_of)).toBeLessThanOrEqual(Date.now());
    }
    expect((await size('cart_abandoners')).body.customers).toBe(2);
    expect((await size('vips')).body.customers).toBe(1);
    expect((await size('spenders')).body.customers).toBe(1); // buyer, total 10
    expect((await size('frugal')).body.customers).toBe(2); // recent and old: no name, no order
    for (const id of ['spenders', 'frugal'])
      expect((await p.http().delete(`/v3/segments/${id}`).set('x-api-key', acc.privateKey)).status).toBe(204);
    const bad = await post('/v3/segments', {
      ...spenders,
      id: 'x',
      definition: { events: [{ type: 'order', within_days: 1, min_total: 5, max_total: 1 }] },
    });
    expect(bad.body.detail.invalids[0]).toMatchObject({ field: 'definition.events' });
    // Lookups at once share the store's query (coalesced while one runs): each still gets its own answer.
    const oneByOne: Record<string, string>[] = [];
    for (const email of emails) oneByOne.push(await states('email', email));
    expect(await Promise.all(emails.map((email) => states('email', email)))).toEqual(oneByOne);
    const unknown = await size('nope');
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail.message).toMatch(/unable to locate segment nope/);
    expect((await size('vips', acc.publicKey)).status).toBe(403);
  });

  it('answers GraphQL as the SDKs parse it: unknown customers, keys, errors, bounds', async () => {
    const unknown = await graphql(AUDIENCE_QUERY('fs_user_id', 'nobody'));
    expect(unknown.status).toBe(200);
    expect(unknown.body.data).toEqual({ customer: null });
    expect(unknown.body.errors[0].extensions).toMatchObject({
      code: 'INVALID_IDENTIFIER_EXCEPTION',
      classification: 'DataFetchingException',
    });
    const attrs = '{customer(email: "merged@example.com") {attributes}}';
    const forbidden = await graphql(attrs);
    expect(forbidden.body.errors[0].extensions.code).toBe('FORBIDDEN');
    const allowed = await graphql(attrs, acc.privateKey);
    expect(allowed.body.data.customer.attributes.first_name).toBe('Ada');
    // Recent events, newest first, a merged customer's included; private key only; `first` bounded.
    const events = (email: string, first: number, key = acc.privateKey) =>
      graphql(
        `{customer(email: "${email}") {events(first: ${first}) {edges {node {type action ts data}}}}}`,
        key,
      );
    const buyer = await events('buyer@example.com', 5);
    const nodes = buyer.body.data.customer.events.edges.map((e: { node: unknown }) => e.node);
    expect(nodes.map((n: { action: string }) => n.action)).toEqual(['purchase', 'add_to_cart']);
    expect(nodes[0].data.order).toMatchObject({ total: 10 });
    expect(Date.parse(nodes[0].ts)).toBeGreaterThan(Date.parse(nodes[1].ts));
    const merged = await events('merged@example.com', 1);
    expect(merged.body.data.customer.events.edges).toHaveLength(1);
    expect(
      (await events('merged@example.com', 10)).body.data.customer.events.edges.map(
        (e: { node: { type: string } }) => e.node.type,
      ),
    ).toEqual(expect.arrayContaining(['page', 'product']));
    expect((await events('buyer@example.com', 5, acc.publicKey)).body.errors[0].extensions.code).toBe(
      'FORBIDDEN',
    );
    expect((await events('buyer@example.com', 1000)).body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const segs = await graphql('{ segments { id name } lists { list_id } }', acc.privateKey);
    expect(segs.body.data.segments.map((s: { id: string }) => s.id)).toEqual(['cart_abandoners', 'vips']);
    // The original's Node client probes with `{ __typename }`.
    expect((await graphql('{ __typename }', acc.privateKey)).body).toEqual({ data: { __typename: 'Query' } });

    const syntax = await graphql('{ customer(');
    expect(syntax.status).toBe(200);
    expect(syntax.body.errors[0].extensions.classification).toBe('InvalidSyntax');
    const deep = await graphql(
      '{ a: __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } } }',
    );
    expect(deep.body.errors[0].extensions.code).toBe('QUERY_TOO_DEEP');
    const many = Array.from(
      { length: 20 },
      (_, i) => `c${i}: customer(email: "a${i}@x.io") { audiences { edges { node { name } } } }`,
    );
    expect((await graphql(`{ ${many.join(' ')} }`)).body.errors[0].extensions.code).toBe('QUERY_TOO_COSTLY');
    expect((await post('/v3/graphql', { nope: 1 }, acc.publicKey)).status).toBe(400);
  });

  it("serves Optimizely's SDK: its identify events are stored once, its lookup qualifies, decide() targets", async () => {
    const { port } = p.app.getHttpServer().address() as { port: number };
    const datafile = JSON.parse(readFileSync('/work/shared/fixtures/optimizely-odp-datafile.json', 'utf8'));
    datafile.integrations = [{ key: 'odp', publicKey: acc.publicKey, host: `http://127.0.0.1:${port}` }];
    const client = createInstance({
      projectConfigManager: createStaticProjectConfigManager({ datafile: JSON.stringify(datafile) }),
      odpManager: createOdpManager({ eventFlushInterval: 100, eventBatchSize: 10 }),
      // Decisions are not reported anywhere: the dispatcher sends nothing out.
      eventProcessor: createForwardingEventProcessor({
        dispatchEvent: () => Promise.resolve({ statusCode: 200 }),
      }),
    });
    await client.onReady({ timeout: 10_000 });
    try {
      // The shopper's cart, sent by the site's own tracking under the same id.
      await post(
        '/v3/events',
        [event({ fs_user_id: 'sdk-user-1' }, 'product', 'add_to_cart', Date.now())],
        acc.publicKey,
      );
      await eventually(async () =>
        expect((await states('fs_user_id', 'sdk-user-1')).cart_abandoners).toBe('qualified'),
      );
      const user = client.createUserContext('sdk-user-1');
      // On Node the SDK identifies a user only with a vuid (browser-only); its own ODP events say who it is.
      client.sendOdpEvent('identified', 'fullstack', new Map([['fs_user_id', 'sdk-user-1']]));
      const fromSdk =
        "SELECT count() AS n FROM {db}.events WHERE type = 'fullstack' AND data_source = 'javascript-sdk' " +
        "AND data_source_type = 'sdk' AND data_source_version = '6.6.1' AND idempotence_id != ''";
      await eventually(async () => (await p.scalar(acc.id, fromSdk)) === 1);
      // Stitched: the SDK's event and the site's add-to-cart belong to one customer.
      const customers =
        "SELECT uniqExact(svc_id) AS n FROM {db}.events WHERE identifiers['fs_user_id'] = 'sdk-user-1'";
      expect(await p.scalar(acc.id, customers)).toBe(1);
      expect(await user.fetchQualifiedSegments()).toBe(true);
      expect(user.qualifiedSegments).toEqual(['cart_abandoners']);
      expect(user.decide('cart_reminder').variationKey).toBe('on');
      const stranger = client.createUserContext('sdk-user-2');
      await stranger.fetchQualifiedSegments();
      expect(stranger.decide('cart_reminder').variationKey).toBe('off');
    } finally {
      await client.close();
    }
    // The SDK resends a refused batch with identical bytes: stored once.
    const batch = Buffer.from(
      JSON.stringify([
        {
          type: 'fullstack',
          action: 'identified',
          identifiers: { fs_user_id: 'sdk-user-3' },
          data: {
            idempotence_id: '6f1c1f43-1111-4b7e-9f0e-000000000003',
            data_source_type: 'sdk',
            data_source: 'javascript-sdk',
            data_source_version: '6.6.1',
          },
        },
      ]),
    );
    const headers = { 'content-type': 'application/json', 'x-api-key': acc.publicKey };
    expect((await p.raw('/v3/events', batch, headers)).status).toBe(202);
    expect((await p.raw('/v3/events', batch, headers)).status).toBe(202);
    const stored =
      "SELECT count() AS n FROM {db}.events WHERE idempotence_id = '6f1c1f43-1111-4b7e-9f0e-000000000003'";
    await eventually(async () => (await p.scalar(acc.id, stored)) === 1);
    // A later batch that is no resend is stored as usual.
    const other = Buffer.from(batch.toString().replace('000000000003', '000000000004'));
    expect((await p.raw('/v3/events', other, headers)).status).toBe(202);
    await eventually(
      async () => (await p.scalar(acc.id, stored.replace('000000000003', '000000000004'))) === 1,
    );
    expect(await p.scalar(acc.id, stored)).toBe(1);
    const profile = await p.http().get('/v3/profiles?fs_user_id=sdk-user-3').set('x-api-key', acc.privateKey);
    expect(profile.status).toBe(200);
  });

  it('qualifies from the digests once its event is stored, and stops when its add-to-cart leaves the window', async () => {
    // The account's lookups count from its digests by now (built at its first lookup, above).
    const digests = p.app.get<DigestedSegmentEventCounts>(SegmentEventCounts);
    const conditions = CART_ABANDONERS.definition.events;
    await eventually(() => expect(digests.digests.usable(acc.id, conditions, Date.now())).toBeDefined());
    // Stamped 7 days less 12 s ago: in the 7-day window for 12 more seconds, time enough to be stored and
    // read on a busy machine (the 5 s of the issue are shown by bench:segments, not timed here).
    const edge = Date.now() - 7 * DAY + 12_000;
    const res = await post(
      '/v3/events',
      [event({ email: 'edge@example.com' }, 'product', 'add_to_cart', edge)],
      acc.publicKey,
    );
    expect(res.status).toBe(202);
    await eventually(
      async () => expect((await states('email', 'edge@example.com')).cart_abandoners).toBe('qualified'),
      12_000,
    );
    // Out once its 7 days are up, never before (counted at read, to the millisecond): an answer of
    // "not qualified" read back before the edge was evaluated before it.
    let early = false;
    await eventually(async () => {
      const out = (await states('email', 'edge@example.com')).cart_abandoners === 'not_qualified';
      if (out && Date.now() < edge + 7 * DAY) early = true;
      return out;
    }, 30_000);
    expect(early).toBe(false);
  });
});

/**
 * Scaled out (API + processor over NATS and Redis, chDB in the processor): the API asks the store's owner
 * for event counts over NATS; memberships come back after the processor restarts, rebuilt from nothing.
 */
// One wiring: event counts over NATS and memberships rebuilt by a restarted processor exist only scaled out.
describe('segments and GraphQL (scaled out)', () => {
  let p: ScaledPlatform;
  let acc: TestAccount;
  const call = (path: string, body: unknown, key: string) =>
    fetch(p.url(path), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(body),
    });
  const state = async (email: string): Promise<string | undefined> => {
    const res = await call('/v3/graphql', { query: AUDIENCE_QUERY('email', email) }, acc.publicKey);
    const body = (await res.json()) as {
      data: { customer: { audiences: { edges: { node: { name: string; state: string } }[] } } | null };
    };
    return body.data.customer?.audiences.edges.find((e) => e.node.name === 'cart_abandoners')?.node.state;
  };

  beforeAll(async () => {
    p = await ScaledPlatform.start();
    acc = await p.createAccount('segments-scaled');
  }, 120_000);
  afterAll(() => p?.close());

  it('qualifies over NATS, and after a processor restart', async () => {
    expect((await call('/v3/segments', CART_ABANDONERS, acc.privateKey)).status).toBe(201);
    const cart = {
      type: 'product',
      action: 'add_to_cart',
      identifiers: { email: 'scaled@example.com' },
      data: { product_id: 'p1' },
    };
    expect((await call('/v3/events', [cart], acc.publicKey)).status).toBe(202);
    await eventually(async () => expect(await state('scaled@example.com')).toBe('qualified'));
    await p.stopProcessor();
    await p.startProcessor();
    await eventually(async () => expect(await state('scaled@example.com')).toBe('qualified'), 60_000);
    const order = {
      type: 'order',
      action: 'purchase',
      identifiers: { email: 'scaled@example.com' },
      data: { order: { order_id: 'o-scaled', total: 10 } },
    };
    expect((await call('/v3/events', [order], acc.publicKey)).status).toBe(202);
    await eventually(async () => expect(await state('scaled@example.com')).toBe('not_qualified'));
  }, 120_000);

  it("counts members over NATS in the store's owner, as the lookups qualify them", async () => {
    const size = async () => {
      const res = await fetch(p.url('/v3/segments/cart_abandoners/size'), {
        headers: { 'x-api-key': acc.privateKey },
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { customers: number }).customers;
    };
    expect(await size()).toBe(0);
    const cart = (email: string) => ({
      type: 'product',
      action: 'add_to_cart',
      identifiers: { email },
      data: { product_id: 'p1' },
    });
    const emails = ['size1@example.com', 'size2@example.com'];
    expect((await call('/v3/events', emails.map(cart), acc.publicKey)).status).toBe(202);
    for (const email of emails) await eventually(async () => expect(await state(email)).toBe('qualified'));
    expect(await size()).toBe(2);
    expect(await state('scaled@example.com')).toBe('not_qualified');
    // Recent events come from the store's owner too.
    const res = await call(
      '/v3/graphql',
      { query: '{customer(email: "size1@example.com") {events(first: 5) {edges {node {type action}}}}}' },
      acc.privateKey,
    );
    expect(await res.json()).toEqual({
      data: { customer: { events: { edges: [{ node: { type: 'product', action: 'add_to_cart' } }] } } },
    });
  }, 60_000);
});
