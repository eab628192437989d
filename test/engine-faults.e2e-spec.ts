import { jest } from '@jest/globals';
import { ChildApp } from './support/child-process.js';
import { ask, ClientLoad, isProperRefusal, type Answer } from './support/client-load.js';
import type { TestAccount } from './support/embedded.js';
import { ADMIN_TOKEN } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { readStore } from './support/store-checks.js';
import { ScaledPlatform } from './support/scaled.js';

/**
 * Faults of the engines in the scaled-out wiring (the test's own nats-server and redis-server, two
 * API replicas, one processor): NATS restarted, Redis flushed, Redis restarted, each under a load of
 * clients that resend what was refused. Each fault is judged as a client would judge it: every
 * request acknowledged (202) is in the store exactly once and readable afterwards; meanwhile, what
 * the platform cannot persist or answer is a 503 with Retry-After in the spec's envelope, never a
 * 500, a hang or a 2xx.
 */
jest.setTimeout(180_000);

const CLIENTS = 4;

// One wiring: NATS and Redis, the engines it fails, run only in the scaled-out wiring.
describe('engine faults under load (scaled-out wiring)', () => {
  let p: ScaledPlatform;
  let replica: ChildApp;
  let acc: TestAccount;

  beforeAll(async () => {
    p = await ScaledPlatform.start();
    replica = await ChildApp.start('apps/api/src/main.js', p.env());
    acc = await p.createAccount('engine-faults');
  }, 90_000);
  afterAll(async () => {
    await replica?.kill('SIGTERM');
    await p?.close();
  }, 30_000);

  const load = (tag: string) =>
    new ClientLoad({ apis: [p.api.baseUrl, replica.baseUrl], publicKey: acc.publicKey }, tag);

  const call = (base: string, path: string, headers: Record<string, string>, init: RequestInit = {}) =>
    ask(`${base}${path}`, -1, { ...init, headers });

  const getProfile = (email: string, base = p.api.baseUrl) =>
    call(base, `/v3/profiles?email=${encodeURIComponent(email)}`, { 'x-api-key': acc.privateKey });

  /** A 200 or a proper 503: what a read may answer while an engine is away (never a 500 or a hang). */
  const answeredOrRefused = (a: Answer) => a.status === 200 || (a.status === 503 && isProperRefusal(a));

  /**
   * Waits until the backlog is drained (nothing pending, every client's latest customer readable),
   * then checks every acknowledged customer through the API and every acknowledged event in the store.
   */
  async function verify(l: ClientLoad, label: string, faultEnded: number): Promise<void> {
    const loadStopped = Date.now();
    try {
      await eventually(
        async () => {
          if ((await p.pending()) !== 0) return false;
          for (const email of l.latestCustomers()) if ((await getProfile(email)).status !== 200) return false;
          return true;
        },
        60_000,
        100,
      );
    } catch (err) {
      // What was left undone, and what the processes said, to find why.
      const latest = await Promise.all(
        l.latestCustomers().map(async (e) => `${e}: ${(await getProfile(e)).status}`),
      );
      const tail = (app?: ChildApp) => app?.output().split('\n').slice(-15).join('\n');
      throw new Error(
        `${label}: the backlog did not drain: ${await p.pending()} pending; latest customers ${latest.join(', ')}\n` +
          `processor:\n${tail(p.processor)}\napi:\n${tail(p.api)}\nreplica:\n${tail(replica)}`,
        { cause: err },
      );
    }
    const drained = Date.now();
    // Every acknowledged customer reads back with its fields.
    const emails = [...l.acknowledged.customers.entries()];
    const wrong: { email: string; status: number; attributes?: unknown }[] = [];
    for (let i = 0; i < emails.length; i += 16) {
      await Promise.all(
        emails.slice(i, i + 16).map(async ([email, firstName]) => {
          const a = await getProfile(email);
          const attributes = (a.body as { attributes?: Record<string, unknown> } | undefined)?.attributes;
          const ok =
            a.status === 200 &&
            attributes?.email === email &&
            (firstName === undefined || attributes.first_name === firstName);
          if (!ok) wrong.push({ email, status: a.status, attributes });
        }),
      );
    }
    // Every acknowledged event once in the store; one live customer per email.
    const tag = label;
    const { counts, doubledCustomers, split } = await readStore(
      p,
      acc.id,
      async (query) => {
        const rows = await query<{ page: string; n: number }>(
          'SELECT page, count() AS n FROM {db}.events WHERE startsWith(page, {prefix:String}) GROUP BY page',
          { prefix: `/${tag}/` },
        );
        const doubled = await query<{ email: string; n: number }>(
          `SELECT lower(email) AS email, count() AS n FROM {db}.customers FINAL
         WHERE merged_into IS NULL AND endsWith(email, '@load.test') AND startsWith(email, {prefix:String})
         GROUP BY email HAVING n > 1`,
          { prefix: `${tag}-` },
        );
        const splitRows = await query<{ email: string; n: number }>(
          `SELECT identifiers['email'] AS email, uniqExact(if(s.survivor != '', s.survivor, e.svc_id)) AS n
         FROM {db}.events AS e LEFT JOIN {db}.customer_survivors AS s ON e.svc_id = s.svc_id
         WHERE startsWith(page, {prefix:String}) GROUP BY email HAVING n > 1`,
          { prefix: `/${tag}/` },
        );
        return {
          counts: new Map(rows.map((r) => [r.page, Number(r.n)])),
          doubledCustomers: doubled,
          split: splitRows,
        };
      },
      { once: true },
    );
    const missing = [...l.acknowledged.events.keys()].filter((page) => !counts.has(page));
    const doubled = [...counts.entries()].filter(([, n]) => n > 1).map(([page]) => page);
    const unacknowledged = [...counts.keys()].filter((page) => !l.acknowledged.events.has(page));
    console.log(
      `${label}: ${l.accepted} requests acknowledged (${l.acknowledged.events.size} events, ` +
        `${l.acknowledged.customers.size} customers), ${l.refusals.length} refused ` +
        `(${summarize(l.refusals)}); drained ${drained - faultEnded} ms after the fault ended ` +
        `(${drained - loadStopped} ms after the load stopped); missing ${missing.length}, doubled ` +
        `${doubled.length}, stored but never acknowledged ${unacknowledged.length}, unreadable or wrong ` +
        `customers ${wrong.length}, doubled customers ${doubledCustomers.length}, split ${split.length}`,
    );
    expect({
      anomalies: l.anomalies.slice(0, 5),
      missing: missing.slice(0, 5),
      doubled: doubled.slice(0, 5),
      wrongCustomers: wrong.slice(0, 5),
      doubledCustomers,
      split,
    }).toEqual({
      anomalies: [],
      missing: [],
      doubled: [],
      wrongCustomers: [],
      doubledCustomers: [],
      split: [],
    });
    expect(l.acknowledged.events.size).toBeGreaterThan(500);
  }

  it('NATS restarted under load: 503 with Retry-After while away, cached keys and reads keep working, nothing lost or doubled', async () => {
    const l = load('nats');
    l.start(CLIENTS);
    await l.acceptedMore(40);
    const visible = await eventually(async () => {
      const email = l.latestCustomers()[0]!;
      return (await getProfile(email)).status === 200 && email;
    });
    // Recent calls cached the account on both replicas; the outage outlasts that cache (5 s).
    await p.nats.down();
    const down = Date.now();
    const probes: Record<string, Answer> = {};
    await eventually(() => l.refusals.length >= CLIENTS, 20_000);
    await new Promise((r) => setTimeout(r, 6_000));
    for (const [i, base] of [p.api.baseUrl, replica.baseUrl].entries()) {
      probes[`ingest${i}`] = await call(
        base,
        '/v3/events',
        { 'x-api-key': acc.publicKey, 'content-type': 'application/json' },
        {
          method: 'POST',
          body: JSON.stringify({
            type: 'pageview',
            identifiers: { email: 'outage@load.test' },
            data: { page: '/outage' },
          }),
        },
      );
      probes[`read${i}`] = await getProfile(visible, base);
      probes[`unknownKey${i}`] = await call(base, '/v3/profiles?email=x@y.z', {
        'x-api-key': 'nosuchtracker',
      });
      probes[`lists${i}`] = await call(base, '/v3/lists', { 'x-api-key': acc.privateKey });
      probes[`admin${i}`] = await call(base, '/admin/v1/accounts', {
        authorization: `Bearer ${ADMIN_TOKEN}`,
      });
    }
    await p.nats.up();
    const up = Date.now();
    await l.acceptedMore(40);
    await l.stop();
    console.log(
      `nats outage ${up - down} ms; probes: ${Object.entries(probes)
        .map(([k, a]) => `${k} ${a.status} (${a.ms} ms, retry-after ${a.retryAfter})`)
        .join(', ')}`,
    );
    // Nothing durable while JetStream is away: never a 2xx, a 503 the client can act on.
    expect(probes.ingest0!.status === 503 && isProperRefusal(probes.ingest0!)).toBe(true);
    expect(probes.ingest1!.status === 503 && isProperRefusal(probes.ingest1!)).toBe(true);
    // Profiles are read from Redis, and the cached account still authenticates the private key.
    expect([probes.read0!.status, probes.read1!.status]).toEqual([200, 200]);
    // What needs the metadata store (an unknown key, lists, the admin API) is a 503, never a 500.
    for (const name of ['unknownKey0', 'unknownKey1', 'lists0', 'lists1', 'admin0', 'admin1'])
      expect({ name, ok: answeredOrRefused(probes[name]!) }).toEqual({ name, ok: true });
    await verify(l, 'nats', up);
  });

  it('Redis flushed (three times) under load: the processor rebuilds the account from the store and goes on', async () => {
    const l = load('flush');
    l.start(CLIENTS);
    await l.acceptedMore(40);
    // Three times, at different moments of the processor's work (a batch resolved but not yet written,
    // a rebuild under way, ...).
    for (let i = 0; i < 3; i++) {
      await p.redis.flush();
      await l.acceptedMore(15);
    }
    const flushed = Date.now();
    await l.acceptedMore(25);
    await l.stop();
    await verify(l, 'flush', flushed);
  });

  it('Redis restarted under load: reads 503 with Retry-After while away, ingest goes on, the processor rebuilds', async () => {
    const l = load('redis');
    l.start(CLIENTS);
    await l.acceptedMore(40);
    const known = l.latestCustomers()[0]!;
    await p.redis.down();
    const down = Date.now();
    await new Promise((r) => setTimeout(r, 1_000));
    const reads = await Promise.all([
      getProfile(known),
      getProfile(known, replica.baseUrl),
      call(p.api.baseUrl, `/v3/lists/subscriptions?email=${encodeURIComponent(known)}`, {
        'x-api-key': acc.privateKey,
      }),
    ]);
    const acceptedWhileDown = l.accepted;
    // Longer than the Redis client's command timeout (5 s): the processor's calls fail and its batches
    // are tried again, not only delayed.
    await new Promise((r) => setTimeout(r, 6_000));
    const acceptedDuringOutage = l.accepted - acceptedWhileDown;
    await p.redis.up();
    const up = Date.now();
    await l.acceptedMore(40);
    await l.stop();
    console.log(
      `redis outage ${up - down} ms; ${acceptedDuringOutage} requests acknowledged meanwhile; reads: ${reads
        .map((a) => `${a.status} (${a.ms} ms, retry-after ${a.retryAfter})`)
        .join(', ')}`,
    );
    // Ingest needs NATS only (rate limits let requests through uncounted): it goes on.
    expect(acceptedDuringOutage).toBeGreaterThan(0);
    for (const a of reads)
      expect({ status: a.status, proper: isProperRefusal(a) }).toEqual({ status: 503, proper: true });
    await verify(l, 'redis', up);
  });
});

function summarize(answers: Answer[]): string {
  const by = new Map<string, number>();
  for (const a of answers) by.set(`${a.path} ${a.status}`, (by.get(`${a.path} ${a.status}`) ?? 0) + 1);
  const slowest = Math.max(0, ...answers.map((a) => a.ms));
  return `${[...by].map(([k, n]) => `${k}: ${n}`).join(', ') || 'none'}; slowest ${slowest} ms`;
}
