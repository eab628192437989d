import { jest } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { ScaledPlatform } from './support/scaled.js';
import { readStore } from './support/store-checks.js';
import { profileKeys } from '@cdp/identity/redis';
import { ACCOUNT_SHARDS, connectRedis } from '@cdp/redis';

/**
 * The scaled-out wiring end to end: the API and the processor as separate processes on NATS
 * JetStream and Redis, the store on chDB. Then the faults, each judged by the same criterion: zero
 * acknowledged events lost, zero duplicated in the store.
 */
jest.setTimeout(120_000);

// One wiring: what it tests (API and processor apart, killed and restarted) exists only scaled out.
describe('scaled-out wiring (API and processor processes, NATS, Redis, chDB)', () => {
  let p: ScaledPlatform;
  let acc: TestAccount;
  const acknowledged = new Set<string>();
  let batchNo = 0;

  beforeAll(async () => {
    p = await ScaledPlatform.start();
    acc = await p.createAccount();
  }, 60_000);
  afterAll(() => p?.close(), 30_000);

  const post = (path: string, body: unknown, key = acc.publicKey) =>
    fetch(p.url(path), {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const profile = async (query: string) => {
    const res = await fetch(p.url(`/v3/profiles?${query}`), { headers: { 'x-api-key': acc.privateKey } });
    return { status: res.status, body: (await res.json()) as { attributes?: Record<string, unknown> } };
  };

  /** `clients` senders post `requests` batches of `size` pageviews; the pages of every 202 are recorded. */
  async function load(
    requests: number,
    size = 50,
    clients = 3,
    during?: () => Promise<void>,
  ): Promise<{ refused: number }> {
    let next = 0;
    let refused = 0;
    const client = async () => {
      while (next < requests) {
        next++;
        const b = batchNo++;
        const pages = Array.from({ length: size }, (_, i) => `/s${b}/e${i}`);
        try {
          const res = await post(
            '/v3/events',
            pages.map((page, i) => ({
              type: 'pageview',
              identifiers: { vuid: `sv${i % 10}` },
              data: { page },
            })),
          );
          if (res.status === 202) pages.forEach((x) => acknowledged.add(x));
          else refused++;
        } catch {
          refused++;
        }
      }
    };
    await Promise.all([...Array.from({ length: clients }, client), during?.()]);
    return { refused };
  }

  async function everyAcknowledgedEventOnce(): Promise<void> {
    const stored = await readStore(
      p,
      acc.id,
      (query) =>
        query<{ page: string; n: number }>(
          "SELECT page, count() AS n FROM {db}.events WHERE startsWith(page, '/s') GROUP BY page",
        ),
      { once: true, timeoutMs: 60_000 },
    );
    const counts = new Map(stored.map((r) => [r.page, Number(r.n)]));
    const missing = [...acknowledged].filter((x) => !counts.has(x)).length;
    const doubled = [...counts.values()].filter((n) => n > 1).length;
    expect({ acknowledged: acknowledged.size > 0, missing, doubled }).toEqual({
      acknowledged: true,
      missing: 0,
      doubled: 0,
    });
  }

  /** The file names of the shared libraries a process has mapped (Linux: /proc/<pid>/maps). */
  const mappedLibraries = (pid: number): string[] => [
    ...new Set(
      readFileSync(`/proc/${pid}/maps`, 'utf8')
        .split('\n')
        .map((line) => line.trim().split(/\s+/)[5] ?? '')
        .filter((path) => path.includes('.so'))
        .map((path) => basename(path)),
    ),
  ];
  const native = (libraries: string[]) => libraries.filter((name) => /^lib(chdb|duckdb)\b/.test(name));

  it('loads only what each role runs: the API maps neither libchdb nor libduckdb, the processor maps libchdb', () => {
    const api = mappedLibraries(p.api.proc.pid!);
    expect(native(api)).toEqual([]);
    // The same reading sees the store's library where it is loaded: the processor owns the chDB store.
    expect(native(mappedLibraries(p.processor!.proc.pid!))).toContain('libchdb.so');
    const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.api.proc.pid!}/status`, 'utf8'))?.[1];
    console.log(`API process idle RSS (CDP_STORE=chdb): ${Math.round(Number(rss) / 1024)} MB`);
  });

  it('accepts, resolves and serves profiles across the processes; the public key cannot read', async () => {
    expect(
      (
        await post('/v3/profiles', {
          attributes: { email: 'Scaled@X.com', vuid: 'sc-1', first_name: 'Sca', last_name: 'Led' },
        })
      ).status,
    ).toBe(202);
    expect(
      (
        await post('/v3/events', {
          type: 'account',
          action: 'login',
          identifiers: { vuid: 'sc-1', customer_id: 'sc-cust' },
        })
      ).status,
    ).toBe(202);
    // The event's customer_id finds the customer as soon as the event is resolved; it is on the profile's
    // attributes once the event's batch is written, which may be a store insert later (the batch before
    // it is written first): wait for both.
    const found = await eventually(async () => {
      const r = await profile('customer_id=sc-cust');
      return r.status === 200 && (r.body as { attributes: { customer_id?: string } }).attributes.customer_id
        ? r.body
        : false;
    });
    expect(found).toEqual({
      attributes: {
        email: 'Scaled@X.com',
        customer_id: 'sc-cust',
        first_name: 'Sca',
        last_name: 'Led',
        name: 'Sca Led',
      },
    });
    const bad = await post('/v3/events', [{ type: 'x', identifiers: {} }]);
    expect(bad.status).toBe(400);
    const forbidden = await fetch(p.url('/v3/profiles?email=scaled@x.com'), {
      headers: { 'x-api-key': acc.publicKey },
    });
    expect(forbidden.status).toBe(403);
  });

  it('loses and doubles nothing when the processor is killed (SIGKILL) in the middle of a stream of batches', async () => {
    await load(60, 50, 3, async () => {
      await eventually(() => batchNo >= 15);
      await p.stopProcessor('SIGKILL');
      await eventually(() => batchNo >= 35);
      await p.startProcessor();
    });
    await everyAcknowledgedEventOnce();
  });

  it('loses and doubles nothing when nats-server restarts under load (refusing with 503 meanwhile)', async () => {
    let outage: { status: number; retryAfter: string | null } | undefined;
    await load(60, 50, 3, async () => {
      await eventually(() => batchNo >= 15);
      await p.nats.down();
      // While JetStream is away, nothing is acknowledged: the API answers 503 with Retry-After.
      const res = await post('/v3/events', { type: 'during-outage', identifiers: { vuid: 'outage' } });
      outage = { status: res.status, retryAfter: res.headers.get('retry-after') };
      await p.nats.up();
    });
    expect(outage).toEqual({ status: 503, retryAfter: expect.stringMatching(/^\d+$/) });
    await everyAcknowledgedEventOnce();
  });

  it('rebuilds a flushed Redis from the store: same customers, merges and profiles, nothing doubled', async () => {
    const before = await profile('customer_id=sc-cust');
    expect(before.status).toBe(200);
    // Two customers, then merged by an event that names both.
    await post('/v3/profiles', { attributes: { vuid: 'mg-a', city: 'Oslo' } });
    await post('/v3/profiles', { attributes: { email: 'mg-b@x.com', first_name: 'B' } });
    await eventually(async () => (await profile('email=mg-b@x.com')).status === 200);
    await post('/v3/events', { type: 'pageview', identifiers: { vuid: 'mg-a', email: 'mg-b@x.com' } });
    const merged = await eventually(async () => {
      const r = await profile('vuid=mg-a');
      return r.body.attributes?.first_name === 'B' && r.body;
    });
    expect(merged).toEqual({ attributes: { city: 'Oslo', email: 'mg-b@x.com', first_name: 'B', name: 'B' } });
    await load(30, 50, 3, async () => {
      await eventually(() => batchNo >= 10);
      await p.redis.flush();
    });
    await post('/v3/events', { type: 'marker', identifiers: { vuid: 'sc-1' } });
    // The processor finds the account cold at its next batch and rebuilds it from what finished messages
    // stored; what was unfinished at the flush (delivered, not acknowledged: on a slow machine the merge's
    // own message may be) is left out and redelivered, so the state is whole again once nothing is pending.
    await eventually(async () => (await p.pending()) === 0, 60_000);
    const after = await eventually(async () => {
      const r = await profile('customer_id=sc-cust');
      return r.status === 200 && r.body;
    }, 30_000);
    expect(after).toEqual(before.body);
    expect((await profile('vuid=sc-1')).body).toEqual(before.body);
    expect((await profile('vuid=mg-a')).body).toEqual(merged);
    expect((await profile('email=mg-b@x.com')).body).toEqual(merged);
    await post('/v3/events', { type: 'pageview', identifiers: { vuid: 'mg-a' } });
    await everyAcknowledgedEventOnce();
    // Every vuid's events belong to one customer (a merged customer's history to its survivor).
    const split = await readStore(
      p,
      acc.id,
      (query) =>
        query<{ vuid: string; n: number }>(
          `SELECT identifiers['vuid'] AS vuid, uniqExact(if(s.survivor != '', s.survivor, e.svc_id)) AS n
         FROM {db}.events AS e LEFT JOIN {db}.customer_survivors AS s ON e.svc_id = s.svc_id
         GROUP BY vuid HAVING n > 1`,
        ),
      { once: true },
    );
    expect(split).toEqual([]);
  });

  it('an account whose profiles lost their shards (or predate them) is rebuilt at its next batch, and goes on', async () => {
    await post('/v3/profiles', { attributes: { vuid: 'up-a', city: 'Bergen' } });
    const before = await eventually(async () => {
      const r = await profile('vuid=up-a');
      return r.status === 200 && r.body;
    });
    // What an upgrade from the account-tag layout leaves (or a primary failed over without them): the
    // identity index loaded, no profile shard loaded.
    const redis = await connectRedis(p.redis.url);
    try {
      for (let shard = 0; shard < ACCOUNT_SHARDS; shard++)
        await redis.commands.del(profileKeys.ready(acc.id, shard));
    } finally {
      await redis.close();
    }
    await post('/v3/profiles', { attributes: { vuid: 'up-a', zip: '5003' } });
    const after = await eventually(async () => {
      const r = await profile('vuid=up-a');
      return r.body.attributes?.zip === '5003' && r.body;
    }, 60_000);
    expect(after).toEqual({ attributes: { ...before.attributes, zip: '5003' } });
    await everyAcknowledgedEventOnce();
  });
});
