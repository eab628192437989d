import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { decodeMessage, EventBus, type EncodedMessage } from '@cdp/bus';
import type { IngestMessage } from '@cdp/contracts';
import { configureFaults, parseFaults } from '@cdp/faults';
import { ChildApp } from './support/child-process.js';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { ScaledPlatform } from './support/scaled.js';
import { countOf, readStore } from './support/store-checks.js';
import { type Platform, WIRINGS } from './support/wirings.js';

/** Short enough that the expiry test waits seconds; every other test resends well within it. */
const TTL_SECONDS = 6;

/**
 * `Idempotency-Key` (README "Idempotent retries") on both wirings: a resend gets the first answer and
 * is stored once; another body is a 422; a bad key is a 400; keys are per account; a key whose
 * request failed validation may be used again; an answer is forgotten after the TTL.
 */
describe.each(WIRINGS)('idempotent retries (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;
  /** `<table> <request id>`: rows each request must have in the store, checked at the end. */
  const expectStored = new Map<string, number>();

  beforeAll(async () => {
    p = await start({ CDP_IDEMPOTENCY_TTL_SECONDS: String(TTL_SECONDS) });
    acc = await p.createAccount('idem');
  }, 60_000);
  afterAll(() => p.close(), 30_000);

  const post = (path: string, body: unknown, key: string | undefined, apiKey = acc.publicKey) => {
    const req = p
      .http()
      .post(path)
      .set(path.startsWith('/v2/') ? 'svc-tracker-id' : 'x-api-key', apiKey);
    if (key !== undefined) void req.set('idempotency-key', key);
    return req.send(body as object);
  };
  const unique = () => `k-${Math.random().toString(36).slice(2)}`;
  const event = (vuid: string) => ({ type: 'pageview', identifiers: { vuid }, data: { page: '/' } });

  it('answers a resend of the same events like the first time, and stores them once', async () => {
    const key = unique();
    const body = [event('idem-a'), event('idem-a')];
    const first = await post('/v3/events', body, key);
    expect(first.status).toBe(202);
    const again = await post('/v3/events', body, key);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body); // the timestamp too: the first answer, not a new one
    expect(again.headers['z-request-id']).toBe(first.headers['z-request-id']);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expectStored.set(`events ${first.headers['z-request-id'] as string}`, 2);
  });

  it('takes the same body gzip-encoded as the same request', async () => {
    const key = unique();
    const bytes = Buffer.from(JSON.stringify(event('idem-gzip')));
    const headers = {
      'x-api-key': acc.publicKey,
      'content-type': 'application/json',
      'idempotency-key': key,
    };
    const first = await p.raw('/v3/events', bytes, headers);
    const again = await p.raw('/v3/events', gzipSync(bytes), { ...headers, 'content-encoding': 'gzip' });
    expect(first.status).toBe(202);
    expect(again).toEqual(first);
  });

  it('refuses the key with another body (422), and leaves the first request as it was', async () => {
    const key = unique();
    const first = await post('/v3/events', event('idem-b'), key);
    expect(first.status).toBe(202);
    const other = await post('/v3/events', event('idem-b-other'), key);
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({
      title: expect.any(String),
      status: 422,
      timestamp: expect.any(String),
    });
    expect(other.body.detail.message).toMatch(/Idempotency-Key/);
    // Another path with the same body is another request too.
    expect((await post('/v3/profiles', event('idem-b'), key)).status).toBe(422);
    expectStored.set(`events ${first.headers['z-request-id'] as string}`, 1);
  });

  it('refuses a malformed key with a 400 naming the header, before anything is stored', async () => {
    for (const bad of ['', 'x'.repeat(256), 'tab\there']) {
      const res = await post('/v3/events', event('idem-bad-key'), bad);
      expect(res.status).toBe(400);
      expect(res.body.detail.invalids).toEqual([{ field: 'Idempotency-Key', reason: expect.any(String) }]);
    }
    expect((await post('/v3/events', event('idem-ok-key'), 'x'.repeat(255))).status).toBe(202);
    expect(
      (await post('/v3/events', event('idem-ok-key2'), ' !"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')).status,
    ).toBe(202);
  });

  it('keeps the keys of two accounts apart', async () => {
    const other = await p.createAccount('idem-other');
    const key = unique();
    const a = await post('/v3/events', event('idem-c'), key);
    const b = await post('/v3/events', event('idem-c2'), key, other.publicKey);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(b.headers['idempotent-replayed']).toBeUndefined();
    expect(b.headers['z-request-id']).not.toBe(a.headers['z-request-id']);
    expectStored.set(`events ${a.headers['z-request-id'] as string}`, 1);
  });

  it('lets a key whose request was refused (400, nothing stored) be used again', async () => {
    const key = unique();
    const refused = await post('/v3/events', { type: 'pageview', identifiers: {} }, key);
    expect(refused.status).toBe(400);
    const fixed = await post('/v3/events', event('idem-d'), key);
    expect(fixed.status).toBe(202);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    expectStored.set(`events ${fixed.headers['z-request-id'] as string}`, 1);
  });

  it('replays every ingestion route: profiles, objects, v2, subscriptions (200) and opt-outs', async () => {
    const requests: [string, unknown, string?][] = [
      ['/v3/profiles', { attributes: { email: 'idem-p@x.com', first_name: 'Ida' } }],
      ['/v3/objects/products', { product_id: 'idem-p1', name: 'Thing' }],
      [
        '/v2/entities',
        [
          { type: 'customer', data: { email: 'idem-v2@x.com', first_name: 'Vee' } },
          { type: 'product', data: { product_id: 'idem-p2', name: 'Other' } },
        ],
      ],
      ['/v2/events', { type: 'pageview', data: { email: 'idem-v2@x.com', page: '/' } }],
      ['/v3/lists/subscriptions', { opted_in: true, email: 'idem-p@x.com' }],
      ['/v3/optout', { requester: 'idem test', email: 'idem-gone@x.com' }, acc.privateKey],
    ];
    for (const [path, body, apiKey] of requests) {
      const key = unique();
      const first = await post(path, body, key, apiKey);
      expect([path, first.status]).toEqual([path, path.includes('subscriptions') ? 200 : 202]);
      const again = await post(path, body, key, apiKey);
      expect([path, again.status, again.body]).toEqual([path, first.status, first.body]);
      expect(again.headers['z-request-id']).toBe(first.headers['z-request-id']);
    }
  });

  it('stores a resent profile update once', async () => {
    const key = unique();
    const body = { attributes: { email: 'idem-once@x.com', first_name: 'Once' } };
    const first = await post('/v3/profiles', body, key);
    const again = await post('/v3/profiles', body, key);
    expect([first.status, again.status]).toEqual([202, 202]);
    expect(again.headers['z-request-id']).toBe(first.headers['z-request-id']);
    expectStored.set(`customers ${first.headers['z-request-id'] as string}`, 1);
  });

  it('documents the header on every route that takes it (OpenAPI)', async () => {
    const doc = (await p.http().get('/openapi.json')).body as {
      paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>>;
    };
    const routes = [
      '/v3/events',
      '/v3/profiles',
      '/v3/objects/{object}',
      '/v3/objects/products',
      '/v3/objects/orders',
      '/v2/entities',
      '/v2/events',
      '/v3/optout',
      '/v3/lists/subscriptions',
    ];
    for (const path of routes) {
      const names = (doc.paths[path]?.post?.parameters ?? [])
        .filter((q) => q.in === 'header')
        .map((q) => q.name);
      expect([path, names]).toEqual([path, expect.arrayContaining(['Idempotency-Key'])]);
    }
    expect(JSON.stringify(doc.paths['/v3/lists']?.post ?? {})).not.toContain('Idempotency-Key');
  });

  it('forgets an answer after the TTL: the key then takes a new request', async () => {
    const key = unique();
    expect((await post('/v3/events', event('idem-e'), key)).status).toBe(202);
    expect((await post('/v3/events', event('idem-e2'), key)).status).toBe(422);
    // Polled: the record expires on its own clock (Redis) or at the next read (file).
    await eventually(
      async () => (await post('/v3/events', event('idem-e2'), key)).status === 202,
      30_000,
      500,
    );
  }, 60_000);

  it('stores every acknowledged request once', async () => {
    // Processed when the last request's visitor resolves.
    const marker = await post('/v3/events', event('idem-marker'), unique());
    await eventually(
      async () =>
        (await p.http().get('/v3/profiles?vuid=idem-marker').set('x-api-key', acc.privateKey)).status === 200,
    );
    expectStored.set(`events ${marker.headers['z-request-id'] as string}`, 1);
    expect(await countsInStore([...expectStored.keys()])).toEqual([...expectStored.values()]);
  }, 60_000);

  /** Rows written by each request (`<table> <message id>`), read once where the store is. */
  function countsInStore(entries: string[]): Promise<number[]> {
    return readStore(
      p,
      acc.id,
      async (query) => {
        const counts: number[] = [];
        for (const entry of entries) {
          const [table, id] = entry.split(' ') as [string, string];
          const sql = `SELECT count() AS n FROM {db}.${table} WHERE msg_id = {id:String}`;
          counts.push(await countOf(query, sql, { id }));
        }
        return counts;
      },
      { once: true },
    );
  }
});

// One wiring: it wraps the bus of the test's own process to fail after the publish; scaled out that is another process.
describe('an idempotent request that failed after its publish (embedded)', () => {
  let p: EmbeddedPlatform;
  let acc: TestAccount;
  const published: IngestMessage[] = [];

  beforeAll(async () => {
    p = await EmbeddedPlatform.start();
    acc = await p.createAccount('idem-crash');
    // Watch what reaches the bus (every publish still goes through); events come encoded (IngestCodec).
    const bus = p.app.get(EventBus);
    const publish = bus.publish.bind(bus);
    bus.publish = (message: IngestMessage) => {
      published.push(message);
      return publish(message);
    };
    const publishEncoded = bus.publishEncoded.bind(bus);
    bus.publishEncoded = (message: EncodedMessage) => {
      published.push(decodeMessage(message));
      return publishEncoded(message);
    };
  }, 60_000);
  afterAll(async () => {
    configureFaults([]);
    await p.close();
  }, 30_000);

  const send = (vuid: string, key: string) =>
    p
      .http()
      .post('/v3/events')
      .set('x-api-key', acc.publicKey)
      .set('idempotency-key', key)
      .send({ type: 'pageview', identifiers: { vuid }, data: { page: '/' } });
  const stored = (id: string) =>
    p.scalar(acc.id, 'SELECT count() AS n FROM {db}.events WHERE msg_id = {id:String}', { id });

  it('is published again as a resend under the same id, and stored once', async () => {
    configureFaults(parseFaults('api.idempotency.answer:throw'));
    const failed = await send('crash-after-publish', 'crash-key');
    configureFaults([]);
    expect(failed.status).toBe(500);
    const id = failed.headers['z-request-id'] as string;
    // The first attempt reached the store: the client never heard of it.
    await eventually(async () => (await stored(id)) === 1);

    const retried = await send('crash-after-publish', 'crash-key');
    expect(retried.status).toBe(202);
    expect(retried.headers['z-request-id']).toBe(id);
    expect(published.filter((m) => m.id === id).map((m) => m.resend)).toEqual([undefined, true]);

    // Batches are stored in order: once a later request is stored, the resend has been processed too.
    const marker = await send('crash-marker', 'crash-marker-key');
    await eventually(async () => (await stored(marker.headers['z-request-id'] as string)) === 1);
    expect(await stored(id)).toBe(1);
    const replay = await send('crash-after-publish', 'crash-key');
    expect([replay.status, replay.body]).toEqual([202, retried.body]);
  });
});

// One wiring: it restarts the all-in-one process on its data directory (the file idempotency store); Redis's survives the API.
describe('idempotency records across a restart (embedded)', () => {
  it('answers a resend after a restart like the first time, and stores the request once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-idem-restart-'));
    let p = await EmbeddedPlatform.start({}, dir);
    try {
      const acc = await p.createAccount('idem-restart');
      const send = () =>
        p
          .http()
          .post('/v3/events')
          .set('x-api-key', acc.publicKey)
          .set('idempotency-key', 'restart-key')
          .send({ type: 'pageview', identifiers: { vuid: 'restart' }, data: { page: '/' } });
      const first = await send();
      expect(first.status).toBe(202);
      await p.close();
      p = await EmbeddedPlatform.start({}, dir);
      const again = await send();
      expect([again.status, again.body, again.headers['z-request-id']]).toEqual([
        202,
        first.body,
        first.headers['z-request-id'],
      ]);
      const id = first.headers['z-request-id'] as string;
      const count = () =>
        p.scalar(acc.id, 'SELECT count() AS n FROM {db}.events WHERE msg_id = {id:String}', { id });
      await eventually(async () => (await count()) === 1);
    } finally {
      await p.close();
    }
  }, 60_000);
});

// One wiring: two API processes on one Redis; embedded, there is one process.
describe('idempotent retries across two API replicas (scaled out)', () => {
  let p: ScaledPlatform;
  let second: ChildApp;
  let acc: TestAccount;

  beforeAll(async () => {
    p = await ScaledPlatform.start();
    second = await ChildApp.start('apps/api/src/main.js', p.env());
    acc = await p.createAccount('idem-replicas');
  }, 60_000);
  afterAll(async () => {
    await second?.kill('SIGTERM');
    await p?.close();
  }, 30_000);

  const send = (base: string, body: unknown, key: string) =>
    fetch(`${base}/v3/events`, {
      method: 'POST',
      headers: { 'x-api-key': acc.publicKey, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });

  it('gives a resend to the other replica the first answer, and a different body a 422', async () => {
    const body = { type: 'pageview', identifiers: { vuid: 'replica-a' }, data: { page: '/' } };
    const first = await send(p.api.baseUrl, body, 'replica-key');
    const again = await send(second.baseUrl, body, 'replica-key');
    expect([first.status, again.status]).toEqual([202, 202]);
    expect(await again.json()).toEqual(await first.json());
    expect(again.headers.get('z-request-id')).toBe(first.headers.get('z-request-id'));
    const other = await send(second.baseUrl, { ...body, data: { page: '/other' } }, 'replica-key');
    expect(other.status).toBe(422);
  });

  it('answers 409 with Retry-After while another replica holds the key', async () => {
    // The holder dies holding it: the key stays held for its lease (a minute here).
    const env = {
      ...p.env(),
      CDP_TEST_FAULTS: 'api.idempotency.held:kill',
      CDP_IDEMPOTENCY_LEASE_SECONDS: '60',
    };
    const doomed = await ChildApp.start('apps/api/src/main.js', env);
    const body = { type: 'pageview', identifiers: { vuid: 'held' }, data: { page: '/' } };
    await expect(send(doomed.baseUrl, body, 'held-key')).rejects.toThrow();
    for (const sent of [body, { ...body, data: { page: '/other' } }]) {
      const res = await send(second.baseUrl, sent, 'held-key');
      expect(res.status).toBe(409);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      expect(((await res.json()) as { detail: { message: string } }).detail.message).toMatch(
        /Idempotency-Key/,
      );
    }
  });

  it.each([
    ['after holding the key, before publishing', 'api.idempotency.held'],
    ['after publishing, before keeping the answer', 'api.idempotency.answer'],
  ])('stores a request once when its API replica dies %s and the client resends', async (_when, point) => {
    const env = { ...p.env(), CDP_TEST_FAULTS: `${point}:kill`, CDP_IDEMPOTENCY_LEASE_SECONDS: '1' };
    const doomed = await ChildApp.start('apps/api/src/main.js', env);
    const body = { type: 'pageview', identifiers: { vuid: `crash-${point}` }, data: { page: '/' } };
    const key = `crash-${point}`;
    await expect(send(doomed.baseUrl, body, key)).rejects.toThrow();
    expect((await doomed.exited()).signal).toBe('SIGKILL');
    // Another replica takes the key over once the dead one's lease (1 s) has run out.
    const retried = await eventually(async () => {
      const res = await send(second.baseUrl, body, key);
      expect(res.status).toBe(202);
      return res;
    });
    const id = retried.headers.get('z-request-id')!;
    const replay = await send(p.api.baseUrl, body, key);
    expect(replay.headers.get('z-request-id')).toBe(id);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    await eventually(async () => {
      const res = await fetch(`${p.api.baseUrl}/v3/profiles?vuid=crash-${point}`, {
        headers: { 'x-api-key': acc.privateKey },
      });
      return res.status === 200;
    });
    const n = await readStore(
      p,
      acc.id,
      (query) => countOf(query, 'SELECT count() AS n FROM {db}.events WHERE msg_id = {id:String}', { id }),
      { once: true },
    );
    expect(n).toBe(1);
  });
});
