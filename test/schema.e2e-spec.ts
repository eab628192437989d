import { ChildApp } from './support/child-process.js';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { postWithKey } from './support/api-calls.js';
import { expectInvalids } from './support/answers.js';
import { storesObject } from './support/schema-objects.js';
import { readStore } from './support/store-checks.js';

/**
 * The schema API and custom data on both wirings. Store checks read through readStore: embedded, in
 * the test's own process; scaled out, chDB belongs to the processor, so it is stopped for the read
 * (ScaledPlatform.withStore) once the API showed everything processed.
 */
describe.each(WIRINGS)('schema API and custom data (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;
  let other: TestAccount;

  beforeAll(async () => {
    ({ p, acc } = await startWithAccount(start, 'schema'));
    other = await p.createAccount('other');
  }, 60_000);
  afterAll(() => p.close(), 30_000);

  const post = (path: string, body: unknown, key = acc.privateKey) => postWithKey(p, key, path, body);
  /** v2 calls take the key from Svc-Tracker-Id. */
  const postV2 = (path: string, body: unknown) =>
    p
      .http()
      .post(path)
      .set('svc-tracker-id', acc.publicKey)
      .send(body as object);
  const get = (path: string, key = acc.privateKey) => p.http().get(path).set('x-api-key', key);
  const profile = (query: string) => get(`/v3/profiles?${query}`);

  const stores = {
    ...storesObject(
      'text',
      { name: 'area', type: 'number', display_name: 'Area', description: 'square metres' },
      { name: 'opened', type: 'timestamp', display_name: 'Opened' },
      { name: 'flagship', type: 'boolean', display_name: 'Flagship' },
      { name: 'featured_product', type: 'string', display_name: 'Featured product' },
    ),
    relations: [
      {
        name: 'featured',
        display_name: 'Featured',
        child_object: 'products',
        join_fields: [{ parent: 'featured_product', child: 'product_id' }],
      },
    ],
  };

  describe('objects, fields and relations', () => {
    it('creates an object with fields and a relation (201) and shows it on every read', async () => {
      const res = await post('/v3/schema/objects', stores);
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ name: 'stores', display_name: 'Stores', alias: 'store' });
      expect(res.body.fields).toContainEqual({
        name: 'area',
        display_name: 'Area',
        type: 'number',
        description: 'square metres',
        auto: false,
        created_by: 'account',
        primary_key: false,
      });
      expect(res.body.fields[0]).toMatchObject({ name: 'store_id', primary_key: true });
      expect(res.body.relations).toEqual([
        {
          name: 'featured',
          display_name: 'Featured',
          child_object: 'products',
          join_fields: [{ parent: 'featured_product', child: 'product_id' }],
        },
      ]);
      expect((await get('/v3/schema/objects/stores')).body).toEqual(res.body);
      expect((await get('/v3/schema/objects/stores/fields/opened')).body).toMatchObject({
        type: 'timestamp',
      });
      expect((await get('/v3/schema/objects/stores/fields')).body).toHaveLength(6);
      expect((await get('/v3/schema/objects/stores/relations/featured')).body).toEqual(res.body.relations[0]);
      expect((await get('/v3/schema/objects/stores/relations')).body).toEqual(res.body.relations);
      // Another account has no such object.
      expect((await get('/v3/schema/objects/stores', other.privateKey)).status).toBe(404);
    });

    it('lists the built-in objects with their fields (auto, made by svc) and relations', async () => {
      const res = await get('/v3/schema/objects');
      expect(res.status).toBe(200);
      const names = (res.body as { name: string }[]).map((o) => o.name);
      expect(names).toEqual(
        expect.arrayContaining(['customers', 'events', 'products', 'orders', 'line_items']),
      );
      const customers = (res.body as { name: string; fields: { name: string }[] }[]).find(
        (o) => o.name === 'customers',
      )!;
      expect(customers.fields).toContainEqual(
        expect.objectContaining({ name: 'email', type: 'string', auto: true, created_by: 'svc' }),
      );
      const parent = await get('/v3/schema/objects/products/relations/parent_product');
      expect(parent.body).toEqual({
        name: 'parent_product',
        display_name: 'Parent Product',
        child_object: 'products',
        join_fields: [{ parent: 'parent_product_id', child: 'product_id' }],
      });
      expect((await get('/v3/schema/objects/events/relations/product')).status).toBe(200);
    });

    it('needs the private key', async () => {
      expect((await get('/v3/schema/objects', acc.publicKey)).status).toBe(403);
      expect((await post('/v3/schema/objects', stores, acc.publicKey)).status).toBe(403);
    });

    it('answers the errors of the spec table', async () => {
      const invalids = async (path: string, body: unknown) => {
        const res = await post(path, body);
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ title: 'Bad Request', status: 400 });
        return res.body.detail.invalids as { field: string; reason: string }[];
      };
      const fresh = (extra: object) => ({
        ...stores,
        name: 'shops',
        display_name: 'Shops',
        alias: 'shop',
        ...extra,
      });
      // Object: name, alias or display name already used; no primary key; unknown child object.
      expect(await invalids('/v3/schema/objects', fresh({ name: 'stores' }))).toEqual([
        { field: 'name', reason: 'already used by object stores' },
      ]);
      expect(await invalids('/v3/schema/objects', fresh({ name: 'customers' }))).toEqual([
        { field: 'name', reason: expect.stringMatching(/^already used/) },
      ]);
      expect(await invalids('/v3/schema/objects', fresh({ alias: 'store' }))).toEqual([
        { field: 'alias', reason: expect.stringMatching(/^already used/) },
      ]);
      expect(await invalids('/v3/schema/objects', fresh({ display_name: 'Stores' }))).toEqual([
        { field: 'display_name', reason: expect.stringMatching(/^already used/) },
      ]);
      expect(
        await invalids(
          '/v3/schema/objects',
          fresh({ fields: [{ name: 'a', type: 'text', display_name: 'A' }], relations: [] }),
        ),
      ).toEqual([{ field: 'fields', reason: expect.stringContaining('primary key') }]);
      const noChild = fresh({
        relations: [
          {
            name: 'r',
            display_name: 'R',
            child_object: 'planets',
            join_fields: [{ parent: 'store_id', child: 'id' }],
          },
        ],
      });
      expect(await invalids('/v3/schema/objects', noChild)).toEqual([
        { field: 'relations.0.child_object', reason: 'unable to locate object planets' },
      ]);
      // Naming rules.
      expect(await invalids('/v3/schema/objects', fresh({ name: 'Shops' }))).toEqual([
        { field: 'name', reason: expect.stringContaining('snake case') },
      ]);
      expect(await invalids('/v3/schema/objects', fresh({ name: 'shop', alias: undefined }))).toEqual([
        { field: 'name', reason: 'must be plural (end in s)' },
      ]);
      // Field: blank name, unsupported type, blank display name; a name already used.
      expect(
        await invalids('/v3/schema/objects/stores/fields', { name: '', type: 'money', display_name: '' }),
      ).toEqual([
        { field: 'name', reason: 'is required' },
        { field: 'type', reason: 'must be one of string, text, number, timestamp, boolean' },
        { field: 'display_name', reason: 'is required' },
      ]);
      expect(
        await invalids('/v3/schema/objects/stores/fields', {
          name: 'city',
          type: 'text',
          display_name: 'Town',
        }),
      ).toEqual([{ field: 'name', reason: expect.stringMatching(/^already used/) }]);
      // Relation: parent type does not match the child's key.
      const mismatch = {
        name: 'biggest',
        display_name: 'Biggest',
        child_object: 'products',
        join_fields: [{ parent: 'area', child: 'product_id' }],
      };
      expect(await invalids('/v3/schema/objects/stores/relations', mismatch)).toEqual([
        { field: 'join_fields.0.parent', reason: expect.stringContaining('does not match') },
      ]);
      // Unknown object, field, relation: 404 naming it.
      const missing = async (path: string, message: string) => {
        const res = await get(path);
        expect(res.status).toBe(404);
        expect(res.body.detail).toEqual({ message });
      };
      await missing('/v3/schema/objects/planets', 'unable to locate object planets');
      await missing('/v3/schema/objects/stores/fields/nope', 'unable to locate field stores.nope');
      await missing('/v3/schema/objects/stores/relations/nope', 'unable to locate relation stores.nope');
      expect(
        (await post('/v3/schema/objects/planets/fields', { name: 'x', type: 'text', display_name: 'X' }))
          .status,
      ).toBe(404);
    });

    it('of two concurrent creations of the same name, exactly one succeeds', async () => {
      const body = (display: string) => ({
        name: 'warehouses',
        display_name: display,
        fields: [{ name: 'warehouse_id', type: 'string', display_name: 'ID', primary: true }],
      });
      const results = await Promise.all([
        post('/v3/schema/objects', body('Warehouses A')),
        post('/v3/schema/objects', body('Warehouses B')),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([201, 400]);
      expect(results.find((r) => r.status === 400)!.body.detail.invalids).toEqual([
        { field: 'name', reason: expect.stringMatching(/^already used/) },
      ]);
      const fields = await Promise.all(
        ['A', 'B'].map((d) =>
          post('/v3/schema/objects/events/fields', { name: 'race', type: 'text', display_name: d }),
        ),
      );
      expect(fields.map((r) => r.status).sort()).toEqual([201, 400]);
    });
  });

  // Two API processes: scaled out only (one process is covered above).
  if (_wiring === 'scaled out') {
    it('scaled out: two API replicas creating one name at once, exactly one wins; the other replica soon honours new fields', async () => {
      if (p instanceof EmbeddedPlatform) throw new Error('registered on the scaled-out wiring only');
      const second = await ChildApp.start('apps/api/src/main.js', p.env());
      try {
        const call = (base: string, path: string, body: unknown) =>
          fetch(`${base}${path}`, {
            method: 'POST',
            headers: { 'x-api-key': acc.privateKey, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
        const object = (display: string) => ({
          name: 'depots',
          display_name: display,
          fields: [{ name: 'depot_id', type: 'string', display_name: 'ID', primary: true }],
        });
        const results = await Promise.all([
          call(p.api.baseUrl, '/v3/schema/objects', object('Depots A')),
          call(second.baseUrl, '/v3/schema/objects', object('Depots B')),
        ]);
        expect(results.map((r) => r.status).sort()).toEqual([201, 400]);
        const field = { name: 'depot_score', type: 'number', display_name: 'Depot score' };
        expect((await call(p.api.baseUrl, '/v3/schema/objects/events/fields', field)).status).toBe(201);
        // The other replica reads the schema again within its cache time and checks the new field's type.
        const event = { type: 'visit', identifiers: { vuid: 'replica' }, data: { depot_score: 'high' } };
        await eventually(async () => (await call(second.baseUrl, '/v3/events', event)).status === 400, 5_000);
      } finally {
        await second.kill('SIGTERM');
      }
    });
  }

  describe('custom data', () => {
    it('a custom event field captures only values sent after it was created, in a typed column', async () => {
      const send = (vuid: string, data: object) =>
        post('/v3/events', { type: 'visit', identifiers: { vuid }, data }, acc.publicKey);
      expect((await send('before-field', { score: '12.5', page: '/' })).status).toBe(202);
      const created = await post('/v3/schema/objects/events/fields', {
        fields: [
          { name: 'score', type: 'number', display_name: 'Score' },
          { name: 'seen_at', type: 'timestamp', display_name: 'Seen at' },
          { name: 'promo', type: 'boolean', display_name: 'Promo' },
        ],
      });
      expect(created.status).toBe(201);
      expect(created.body.fields.map((f: { name: string }) => f.name)).toEqual(['score', 'seen_at', 'promo']);
      const after = await send('after-field', {
        score: '123456789012345678',
        seen_at: 1700000000,
        promo: '1',
        undefined_field: 'dropped',
      });
      expect(after.status).toBe(202);
      expect((await send('decimals', { score: '12345678901234.5678' })).status).toBe(202);
      expect((await send('json-number', { score: -1234.5678, promo: 0 })).status).toBe(202);
      // Type checks: the index of the record and the field's path.
      const bad = await post(
        '/v3/events',
        [
          { type: 'visit', identifiers: { vuid: 'x1' }, data: { score: 1 } },
          { type: 'visit', identifiers: { vuid: 'x2' }, data: { score: '1234567890123456789' } },
          {
            type: 'visit',
            identifiers: { vuid: 'x3' },
            data: { score: 1.23456, promo: 'yes', seen_at: 'soon' },
          },
        ],
        acc.publicKey,
      );
      expectInvalids(bad, [
        {
          event: 1,
          field: 'data.score',
          reason: expect.stringContaining('18 digits'),
        },
        {
          event: 2,
          field: 'data.score',
          reason: expect.stringContaining('4 digits after'),
        },
        {
          event: 2,
          field: 'data.promo',
          reason: 'must be one of 0, 1, true, false',
        },
        {
          event: 2,
          field: 'data.seen_at',
          reason: expect.stringContaining('ISO 8601 date and time or unix epoch seconds'),
        },
      ]);
      await eventually(async () => (await profile('vuid=decimals')).status === 200);
    });

    it('a custom customer field reaches the profile and its column; invalid values are a 400', async () => {
      expect(
        (
          await post('/v3/schema/objects/customers/fields', {
            name: 'loyalty_tier',
            type: 'number',
            display_name: 'Tier',
          })
        ).status,
      ).toBe(201);
      const res = await post(
        '/v3/profiles',
        { attributes: { email: 'tier@example.com', loyalty_tier: 3, unknown_thing: 'x' } },
        acc.publicKey,
      );
      expect(res.status).toBe(202);
      const found = await eventually(async () => {
        const r = await profile('email=tier@example.com');
        if (r.status !== 200) throw new Error(String(r.status));
        return r.body;
      });
      expect(found.attributes).toEqual({ email: 'tier@example.com', loyalty_tier: 3 });
      const bad = await post(
        '/v3/profiles',
        [
          { attributes: { email: 'ok@example.com' } },
          { attributes: { email: 'x@example.com', loyalty_tier: 'gold' } },
        ],
        acc.publicKey,
      );
      expectInvalids(bad, [
        {
          event: 1,
          field: 'attributes.loyalty_tier',
          reason: 'must be a number in standard decimal format',
        },
      ]);
    });

    it('upserts records of an account object by /v3/objects/{object} (202), additively', async () => {
      const first = await post(
        '/v3/objects/stores',
        [
          {
            store_id: 's1',
            city: 'Oslo',
            area: '120.5',
            opened: 1700000000,
            flagship: 'true',
            color: 'dropped',
          },
          { store_id: 's2', city: 'Bergen' },
        ],
        acc.publicKey,
      );
      expect(first.status).toBe(202);
      expect(first.body).toEqual({ title: 'Accepted', status: 202, timestamp: expect.any(String) });
      // By its alias, one record, changing only the field it carries.
      expect((await post('/v3/objects/store', { store_id: 's1', area: 99 }, acc.publicKey)).status).toBe(202);
      // Customers are written the way profiles are.
      expect(
        (
          await post(
            '/v3/objects/customers',
            { email: 'obj@example.com', city: 'Rome', loyalty_tier: 7 },
            acc.publicKey,
          )
        ).status,
      ).toBe(202);
      const seen = await eventually(async () => {
        const r = await profile('email=obj@example.com');
        if (r.status !== 200) throw new Error(String(r.status));
        return r.body;
      });
      expect(seen.attributes).toEqual({ email: 'obj@example.com', city: 'Rome', loyalty_tier: 7 });
    });

    it('refuses unknown objects (404), missing primary keys, bad values and oversized batches (400)', async () => {
      const unknown = await post('/v3/objects/planets', { planet_id: 'x' }, acc.publicKey);
      expect(unknown.status).toBe(404);
      expect(unknown.body.detail).toEqual({ message: 'unable to locate object planets' });
      // Another account's object is unknown to this one.
      expect((await post('/v3/objects/stores', { store_id: 'z' }, other.publicKey)).status).toBe(404);
      const bad = await post(
        '/v3/objects/stores',
        [{ store_id: 'ok' }, { city: 'Nowhere' }, { store_id: 's9', area: '1.23456' }],
        acc.publicKey,
      );
      expectInvalids(bad, [
        { event: 1, field: 'store_id', reason: 'is required (primary key)' },
        {
          event: 2,
          field: 'area',
          reason: expect.stringContaining('4 digits after'),
        },
      ]);
      const many = (n: number) => Array.from({ length: n }, (_, i) => ({ store_id: `bulk-${i}` }));
      expect((await post('/v3/objects/stores', many(1000), acc.publicKey)).status).toBe(202);
      const over = await post('/v3/objects/stores', many(1001), acc.publicKey);
      expect(over.status).toBe(400);
      expect(over.body.detail.invalids).toEqual([{ field: 'body', reason: expect.stringContaining('1000') }]);
      const customer = await post('/v3/objects/customers', { city: 'No identifier' }, acc.publicKey);
      expectInvalids(customer, [{ event: 0, field: 'body', reason: expect.any(String) }]);
    });

    it('custom product fields are taken in by type through /v3/objects/products and /v2/entities; undefined ones are reported as dropped', async () => {
      for (const field of [
        { name: 'in_stock', type: 'boolean', display_name: 'In stock' },
        { name: 'rating', type: 'number', display_name: 'Rating' },
        { name: 'launched', type: 'timestamp', display_name: 'Launched' },
      ])
        expect((await post('/v3/schema/objects/products/fields', field)).status).toBe(201);
      const res = await post(
        '/v3/objects/products',
        [
          {
            product_id: 'cp1',
            name: 'Chair',
            in_stock: true,
            rating: '4.5',
            launched: 1700000000,
            colour: 'red',
          },
        ],
        acc.publicKey,
      );
      expect(res.status).toBe(202);
      expect(res.body.dropped).toEqual([{ event: 0, fields: ['colour'] }]);
      const entity = await postV2('/v2/entities', [
        { type: 'product', data: { product_id: 'cp2', name: 'Desk', in_stock: 0, size: 'L' } },
      ]);
      expect(entity.status).toBe(202);
      expect(entity.body.dropped).toEqual([{ event: 0, fields: ['size'] }]);
      // An update naming only a base field keeps the custom values (the feed is additive).
      expect(
        (await post('/v3/objects/products', { product_id: 'cp1', price: 10 }, acc.publicKey)).status,
      ).toBe(202);
      const bad = await post('/v3/objects/products', [{ product_id: 'cp3', rating: 'high' }], acc.publicKey);
      expectInvalids(bad, [
        {
          event: 0,
          field: 'rating',
          reason: 'must be a number in standard decimal format',
        },
      ]);
      const badEntity = await postV2('/v2/entities', [
        { type: 'product', data: { product_id: 'cp3', in_stock: 'maybe' } },
      ]);
      expectInvalids(badEntity, [
        {
          event: 0,
          field: 'data.in_stock',
          reason: 'must be one of 0, 1, true, false',
        },
      ]);
    });

    it('the store holds it all in typed columns and tables', async () => {
      // Processed: a marker sent after everything else has its profile.
      expect(
        (await post('/v3/events', { type: 'marker', identifiers: { vuid: 'schema-marker' } }, acc.publicKey))
          .status,
      ).toBe(202);
      await eventually(async () => (await profile('vuid=schema-marker')).status === 200);
      // Polled until it holds: the marker's profile can be answered before its store write.
      await readStore(
        p,
        acc.id,
        async (query) => {
          const events = await query<Record<string, unknown>>(
            "SELECT identifiers['vuid'] AS vuid, toString(score) AS score, toUnixTimestamp64Milli(seen_at) AS seen_ms, promo FROM {db}.events WHERE type = 'visit' ORDER BY vuid",
          );
          expect(events).toEqual([
            { vuid: 'after-field', score: '123456789012345678', seen_ms: 1700000000000, promo: true },
            { vuid: 'before-field', score: null, seen_ms: null, promo: null },
            { vuid: 'decimals', score: '12345678901234.5678', seen_ms: null, promo: null },
            { vuid: 'json-number', score: '-1234.5678', seen_ms: null, promo: false },
          ]);
          const types = await query<{ name: string; type: string }>(
            "SELECT name, type FROM system.columns WHERE database = '{db}' AND table = 'events' AND name IN ('score', 'seen_at', 'promo') ORDER BY name",
          );
          expect(types).toEqual([
            { name: 'promo', type: 'Nullable(Bool)' },
            { name: 'score', type: 'Nullable(Decimal(22, 4))' },
            { name: 'seen_at', type: "Nullable(DateTime64(3, 'UTC'))" },
          ]);
          const customers = await query<{ email: string; tier: string }>(
            'SELECT email, toString(loyalty_tier) AS tier FROM {db}.customers FINAL WHERE loyalty_tier IS NOT NULL ORDER BY email',
          );
          expect(customers).toEqual([
            { email: 'obj@example.com', tier: '7' },
            { email: 'tier@example.com', tier: '3' },
          ]);
          const stored = await query<Record<string, unknown>>(
            "SELECT store_id, city, toString(area) AS area, toUnixTimestamp64Milli(opened) AS opened_ms, flagship FROM {db}.obj_stores FINAL WHERE store_id IN ('s1', 's2') ORDER BY store_id",
          );
          expect(stored).toEqual([
            { store_id: 's1', city: 'Oslo', area: '99', opened_ms: 1700000000000, flagship: true },
            { store_id: 's2', city: 'Bergen', area: null, opened_ms: null, flagship: null },
          ]);
          const products = await query<Record<string, unknown>>(
            "SELECT product_id, name, toString(price) AS price, in_stock, toString(rating) AS rating, toUnixTimestamp64Milli(launched) AS launched_ms FROM {db}.products FINAL WHERE product_id IN ('cp1', 'cp2', 'cp3') ORDER BY product_id",
          );
          expect(products).toEqual([
            {
              product_id: 'cp1',
              name: 'Chair',
              price: '10',
              in_stock: true,
              rating: '4.5',
              launched_ms: 1700000000000,
            },
            {
              product_id: 'cp2',
              name: 'Desk',
              price: null,
              in_stock: false,
              rating: null,
              launched_ms: null,
            },
          ]);
          const bulk = await query<{ n: number }>(
            "SELECT count() AS n FROM {db}.obj_stores FINAL WHERE startsWith(store_id, 'bulk-')",
          );
          expect(Number(bulk[0]!.n)).toBe(1000);
          return true;
        },
        { timeoutMs: 15_000 },
      );
    });
  });
});
