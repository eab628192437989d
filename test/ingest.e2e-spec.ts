import { gzipSync } from 'node:zlib';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { pageviews } from './support/generators.js';
import { StoreChecks, type StoreQuery } from './support/store-checks.js';
import { type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { postWithKey } from './support/api-calls.js';
import { expectInvalids } from './support/answers.js';

const MiB = 1024 * 1024;

/**
 * The same suite on both wirings, checked through the API and in the store: embedded, the test reads
 * the store in its own process; scaled out, the store checks run together in the last test, with the
 * processor stopped for the read (test/support/store-checks.ts).
 */
describe.each(WIRINGS)('the first write path: events and profiles (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;

  beforeAll(async () => ({ p, acc } = await startWithAccount(start)), 60_000);
  afterAll(() => p.close(), 30_000);
  const store = new StoreChecks(() => ({ platform: p, account: acc.id }));

  const events = (body: unknown, key = acc.publicKey) => postWithKey(p, key, '/v3/events', body);
  const profiles = (body: unknown) => postWithKey(p, acc.publicKey, '/v3/profiles', body);
  const profile = (query: string) => p.http().get(`/v3/profiles?${query}`).set('x-api-key', acc.privateKey);
  /** Events matching `where`, counted with a store check's query. */
  const count = async (query: StoreQuery, where: string) =>
    Number(
      (await query<{ n: number | string }>(`SELECT count() AS n FROM {db}.events WHERE ${where}`))[0]!.n,
    );

  it('stores one event with its defaults: ts now, channel offline, typed data', async () => {
    const before = Date.now();
    const res = await events({
      type: 'product',
      action: 'detail',
      identifiers: { vuid: 'solo' },
      data: { product_id: 'p1', landing: true, days_since_last_visit: 4 },
    });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ title: 'Accepted', status: 202, timestamp: expect.any(String) });
    // Processed: its visitor has a customer now.
    await eventually(async () => (await profile('vuid=solo')).status === 200);
    const answered = Date.now();
    await store.check(async (query) => {
      const rows = await query<Record<string, unknown>>(
        "SELECT type, action, channel, product_id, landing, days_since_last_visit, toUnixTimestamp64Milli(ts) AS ms FROM {db}.events WHERE identifiers['vuid'] = 'solo'",
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        type: 'product',
        action: 'detail',
        channel: 'offline',
        product_id: 'p1',
        landing: true,
        days_since_last_visit: 4,
      });
      // ts defaults to the time the API took the event: between sending it and the answer.
      expect(Number(rows[0]!.ms)).toBeGreaterThanOrEqual(before - 1000);
      expect(Number(rows[0]!.ms)).toBeLessThanOrEqual(answered);
    });
  });

  it('reads ts as unix seconds or ISO 8601 (a bare date is midnight UTC) and keeps a given channel', async () => {
    const res = await events([
      { type: 't1', identifiers: { vuid: 'ts1' }, data: { ts: 1700000000 } },
      { type: 't2', identifiers: { vuid: 'ts2' }, data: { ts: '2024-03-05' } },
      { type: 't3', identifiers: { vuid: 'ts3' }, data: { ts: '2024-03-05T10:11:12+02:00', channel: 'web' } },
    ]);
    expect(res.status).toBe(202);
    await store.check(async (query) => {
      const rows = await query<{ type: string; ms: number; channel: string }>(
        "SELECT type, toUnixTimestamp64Milli(ts) AS ms, channel FROM {db}.events WHERE type IN ('t1','t2','t3') ORDER BY type",
      );
      expect(rows.map((r) => Number(r.ms))).toEqual([
        1700000000000,
        Date.UTC(2024, 2, 5),
        Date.UTC(2024, 2, 5, 8, 11, 12),
      ]);
      expect(rows.map((r) => r.channel)).toEqual(['offline', 'offline', 'web']);
    });
  });

  it('rejects a batch with one invalid per problem, indexed, and stores nothing of it', async () => {
    const res = await events([
      { type: 'ok', identifiers: { vuid: 'batch-a' } },
      { identifiers: { vuid: 'batch-b' } },
      { type: 'x', identifiers: { vuid: 'null', email: '' } },
      {
        type: 'x',
        identifiers: { vuid: 'batch-d' },
        data: { landing: 'yes', days_since_last_visit: 1.5, ts: 'yesterday' },
      },
      { type: 'x', identifiers: { vuid: 'batch-e' }, data: { page: 'p'.repeat(1025) } },
    ]);
    expectInvalids(res, [
      { event: 1, field: 'type', reason: 'is required' },
      {
        event: 2,
        field: 'identifiers',
        reason: expect.stringContaining('at least one identifier'),
      },
      {
        event: 3,
        field: 'data.days_since_last_visit',
        reason: expect.any(String),
      },
      { event: 3, field: 'data.landing', reason: expect.any(String) },
      { event: 4, field: 'data.page', reason: expect.stringContaining('1024') },
    ]);
    // Nothing of it was published: a marker sent after it arrives while batch-a never does.
    await events({ type: 'marker', identifiers: { vuid: 'after-invalid' } });
    await eventually(async () => (await profile('vuid=after-invalid')).status === 200);
    expect((await profile('vuid=batch-a')).status).toBe(404);
    await store.check(async (query) => {
      expect(await count(query, "type = 'marker'")).toBe(1);
      expect(await count(query, "identifiers['vuid'] = 'batch-a'")).toBe(0);
    });
  });

  it('reports an unreadable ts on its field', async () => {
    const res = await events({ type: 'x', identifiers: { vuid: 'bad-ts' }, data: { ts: '2024-02-30' } });
    expectInvalids(res, [{ event: 0, field: 'data.ts', reason: expect.any(String) }]);
  });

  it('takes a batch of exactly 1000 events and refuses 1001 and an empty one', async () => {
    expect((await events(pageviews(1000, 'edge-'))).status).toBe(202);
    const over = await events(pageviews(1001, 'over-'));
    expect(over.status).toBe(400);
    expect(over.body.detail.invalids).toEqual([{ field: 'body', reason: expect.stringContaining('1000') }]);
    expect((await events([])).status).toBe(400);
    await eventually(async () => (await profile('vuid=edge-999')).status === 200);
    await store.check(async (query) => {
      expect(await count(query, "startsWith(identifiers['vuid'], 'edge-')")).toBe(1000);
      expect(await count(query, "startsWith(identifiers['vuid'], 'over-')")).toBe(0);
    });
  });

  /** A valid event padded with spaces to exactly `size` bytes of JSON. */
  function bodyOfSize(size: number): Buffer {
    const json = JSON.stringify({ type: 'sized', identifiers: { vuid: `sized-${size}` } });
    return Buffer.from(json + ' '.repeat(size - json.length));
  }
  const raw = (body: Buffer, gzip = false, encoding = 'gzip') =>
    p.raw('/v3/events', gzip ? gzipSync(body) : body, {
      'x-api-key': acc.publicKey,
      'content-type': 'application/json',
      ...(gzip ? { 'content-encoding': encoding } : {}),
    });

  it('accepts a body of exactly 8 MiB and answers 413 to one byte more', async () => {
    expect((await raw(bodyOfSize(8 * MiB))).status).toBe(202);
    const over = await raw(bodyOfSize(8 * MiB + 1));
    expect(over.status).toBe(413);
    expect(over.body.title).toBe('Payload Too Large');
  });

  it('accepts gzip bodies and applies the limit to the decompressed size', async () => {
    const small = await raw(
      Buffer.from(JSON.stringify({ type: 'zipped', identifiers: { vuid: 'gz' } })),
      true,
    );
    expect(small.status).toBe(202);
    expect((await raw(bodyOfSize(8 * MiB), true)).status).toBe(202);
    expect((await raw(bodyOfSize(8 * MiB + 1), true)).status).toBe(413);
    await eventually(async () => (await profile('vuid=gz')).status === 200);
    await store.check(async (query) => expect(await count(query, "type = 'zipped'")).toBe(1));
    const broken = await p.raw('/v3/events', Buffer.from('not gzip'), {
      'x-api-key': acc.publicKey,
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    });
    expect(broken.status).toBe(400);
    expect((await raw(Buffer.from('{}'), true, 'br')).status).toBe(415);
  });

  describe('profiles', () => {
    it('derives name from first and last name, and finds the profile by every identifier kind', async () => {
      const res = await profiles({
        attributes: {
          email: 'Ann@Example.com',
          customer_id: 'cust-1',
          vuid: 'ann-device',
          svc_alias_cart: 'cart-9',
          first_name: 'Ann',
          last_name: 'Lee',
          city: 'Oslo',
          favourite: 'x',
        },
      });
      expect(res.status).toBe(202);
      const expected = {
        email: 'Ann@Example.com',
        customer_id: 'cust-1',
        first_name: 'Ann',
        last_name: 'Lee',
        name: 'Ann Lee',
        city: 'Oslo',
      };
      const found = await eventually(async () => {
        const r = await profile('email=ann@example.com');
        return r.status === 200 && r.body;
      });
      expect(found).toEqual({ attributes: expected });
      for (const q of [
        'customer_id=cust-1',
        'vuid=ann-device',
        'svc_alias_cart=cart-9',
        'email=ANN@example.com',
      ]) {
        expect((await profile(q)).body).toEqual({ attributes: expected });
      }
    });

    it('applies updates additively: only sent fields change, null or "" unsets', async () => {
      await profiles({ attributes: { email: 'add@x.com', first_name: 'A', city: 'Oslo', phone: '+47 000' } });
      await eventually(async () => (await profile('email=add@x.com')).status === 200);
      await profiles([{ attributes: { email: 'add@x.com', city: 'Rome', phone: null, first_name: '' } }]);
      const after = await eventually(async () => {
        const r = await profile('email=add@x.com');
        return r.body.attributes.city === 'Rome' && r.body.attributes;
      });
      // The name was derived from the first name, never sent: it goes with it (README "Derived `name`").
      expect(after).toEqual({ email: 'add@x.com', city: 'Rome' });
    });

    it('links identifiers seen together in events, and an event with an email sets it on the profile', async () => {
      await events({ type: 'pageview', identifiers: { vuid: 'dev-7' } });
      await events({
        type: 'account',
        action: 'login',
        identifiers: { vuid: 'dev-7', email: 'seven@x.com' },
      });
      const seen = await eventually(async () => {
        const r = await profile('vuid=dev-7');
        return r.body.attributes?.email === 'seven@x.com' && r.body;
      });
      expect(seen).toEqual({ attributes: { email: 'seven@x.com' } });
      await store.check(async (query) => {
        const ids = await query<{ events: number; customers: number }>(
          "SELECT count() AS events, uniqExact(svc_id) AS customers FROM {db}.events WHERE identifiers['vuid'] = 'dev-7'",
        );
        expect(Number(ids[0]!.events)).toBe(2);
        expect(Number(ids[0]!.customers)).toBe(1);
      });
    });

    it('answers 400 without an identifier, 404 for an unknown customer, and rejects profiles without one', async () => {
      const none = await profile('');
      expect(none.status).toBe(400);
      expect(none.body.detail.invalids[0].field).toEqual([
        'customer_id',
        'email',
        'vuid',
        'fs_user_id',
        'svc_alias_<name>',
      ]);
      expect((await profile('email=nobody@x.com')).status).toBe(404);
      const bad = await profiles([
        { attributes: { email: 'fine@x.com' } },
        { attributes: { first_name: 'NoId' } },
        {},
      ]);
      expectInvalids(bad, [
        {
          event: 1,
          field: 'attributes',
          reason: expect.stringContaining('identifier'),
        },
        { event: 2, field: 'attributes', reason: 'is required' },
      ]);
    });

    it('takes 1000 profiles in one request and refuses 1001', async () => {
      const batch = (n: number) =>
        Array.from({ length: n }, (_, i) => ({ attributes: { customer_id: `bulk-${i}`, city: 'X' } }));
      expect((await profiles(batch(1000))).status).toBe(202);
      expect((await profiles(batch(1001))).status).toBe(400);
      await eventually(async () => (await profile('customer_id=bulk-999')).status === 200);
    });
  });

  it('holds in the store what the tests above checked there (scaled out: read once, here)', async () => {
    const ran = await store.runKept();
    if (!(p instanceof EmbeddedPlatform)) expect(ran).toBe(6);
  }, 120_000);
});
