import { ChildApp } from './support/child-process.js';
import { ADMIN_TOKEN, type EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { ScaledPlatform } from './support/scaled.js';
import { WIRINGS } from './support/wirings.js';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: { detail?: { message?: string } };
}

/**
 * Sends requests one after the other and reports their answers and how long the run took: a token
 * comes back every 1/rate seconds, so only a run slower than that may see one more request pass.
 */
async function run(
  n: number,
  send: (i: number) => Promise<Answer>,
): Promise<{ answers: Answer[]; ms: number }> {
  const started = Date.now();
  const answers: Answer[] = [];
  for (let i = 0; i < n; i++) answers.push(await send(i));
  return { answers, ms: Date.now() - started };
}

/** How many requests of a run passed, checked against the edge: `limit`, plus what refilled meanwhile. */
function expectEdge(result: { answers: Answer[]; ms: number }, limit: number, ratePerSecond: number): void {
  const passed = result.answers.filter((a) => a.status !== 429).length;
  const refilled = Math.floor((result.ms * ratePerSecond) / 1000);
  if (refilled === 0) {
    expect(result.answers.map((a) => a.status === 429)).toEqual([
      ...Array<boolean>(limit).fill(false),
      ...Array<boolean>(result.answers.length - limit).fill(true),
    ]);
  } else {
    expect(passed).toBeGreaterThanOrEqual(limit);
    expect(passed).toBeLessThanOrEqual(limit + refilled);
  }
}

describe.each(WIRINGS)('rate limits per account and API family (%s)', (_wiring, start) => {
  let p: EmbeddedPlatform | ScaledPlatform;

  beforeAll(async () => {
    p = await start();
  }, 60_000);
  afterAll(() => p.close(), 30_000);

  const toAnswer = (res: { status: number; headers: Record<string, string>; body: unknown }): Answer => ({
    status: res.status,
    headers: res.headers,
    body: res.body as Answer['body'],
  });
  const getProfile = async (acc: TestAccount, i = 0) =>
    toAnswer(await p.http().get(`/v3/profiles?email=nobody${i}@x.com`).set('x-api-key', acc.privateKey));
  const postProfile = async (acc: TestAccount, i = 0) =>
    toAnswer(
      await p
        .http()
        .post('/v3/profiles')
        .set('x-api-key', acc.publicKey)
        .send({ attributes: { email: `rl${i}@x.com` } }),
    );
  /** An account whose key is already cached by the API (an unlimited request), so a run measures the limit only. */
  const account = async (name: string): Promise<TestAccount> => {
    const acc = await p.createAccount(name, {}); // the spec's default rates
    const warm = await p
      .http()
      .post('/v3/events')
      .set('x-api-key', acc.privateKey)
      .send({ type: 'warm', identifiers: { vuid: 'warm' } });
    expect(warm.status).toBe(202);
    return acc;
  };
  const admin = (method: 'get' | 'patch', path: string) =>
    p.http()[method](path).set('authorization', `Bearer ${ADMIN_TOKEN}`);

  it('lets 10 profile requests a second through; the 11th gets 429 with Retry-After and RateLimit-*', async () => {
    const acc = await account('ten');
    const result = await run(11, (i) => getProfile(acc, i));
    expectEdge(result, 10, 10);
    const passed = result.answers.slice(0, 10);
    expect(passed.map((a) => a.status)).toEqual(Array<number>(10).fill(404));
    expect(passed[0]!.headers['ratelimit-limit']).toBe('10');
    expect(passed[0]!.headers['ratelimit-remaining']).toBe('9');
    const refused = result.answers.filter((a) => a.status === 429);
    if (refused.length === 0) return; // only on a run too slow to see the edge (checked above)
    const last = refused[0]!;
    expect(last.headers['content-type']).toMatch(/^application\/json/);
    expect(last.headers['retry-after']).toBe('1');
    expect(last.headers['ratelimit-limit']).toBe('10');
    expect(last.headers['ratelimit-remaining']).toBe('0');
    expect(last.headers['ratelimit-reset']).toBe('1');
    expect(last.body).toEqual({
      title: 'Too Many Requests',
      status: 429,
      timestamp: expect.any(String),
      detail: { message: expect.stringContaining('profiles') },
    });
  });

  it('leaves other accounts alone, and lets the bucket refill', async () => {
    const a = await account('busy');
    const b = await account('quiet');
    const burst = await run(12, (i) => getProfile(a, i));
    expect(burst.answers.some((x) => x.status === 429)).toBe(true);
    // The other account has its whole allowance.
    expectEdge(await run(11, (i) => getProfile(b, i)), 10, 10);
    // A token comes back within 100 ms.
    const refused = Date.now();
    let again = await getProfile(a);
    while (again.status === 429) {
      expect(Date.now() - refused).toBeLessThan(5_000);
      await new Promise((r) => setTimeout(r, 20));
      again = await getProfile(a);
    }
    expect(again.status).toBe(404);
  });

  it('counts reads and writes of /v3/profiles in one bucket, and never limits events by default', async () => {
    const acc = await account('mixed');
    const result = await run(11, (i) => (i % 2 ? getProfile(acc, i) : postProfile(acc, i)));
    expectEdge(result, 10, 10);
    expect(result.answers.slice(0, 10).map((a) => a.status)).toEqual([
      202, 404, 202, 404, 202, 404, 202, 404, 202, 404,
    ]);
    const events = await run(40, async () =>
      toAnswer(
        await p
          .http()
          .post('/v3/events')
          .set('x-api-key', acc.publicKey)
          .send({ type: 'pageview', identifiers: { vuid: 'v' }, data: { page: '/' } }),
      ),
    );
    expect(events.answers.every((a) => a.status === 202)).toBe(true);
    expect(events.answers[0]!.headers['ratelimit-limit']).toBeUndefined();
  });

  it('spends no token on a request that is not authenticated', async () => {
    const acc = await account('unauth');
    for (let i = 0; i < 15; i++) {
      expect((await p.http().get('/v3/profiles?email=a@x.com').set('x-api-key', 'nobody')).status).toBe(401);
    }
    expectEdge(await run(11, (i) => getProfile(acc, i)), 10, 10);
  });

  it('takes per-account rates from the admin API', async () => {
    const acc = await account('plan');
    const path = `/admin/v1/accounts/${acc.id}/rate-limits`;
    const initial = await admin('get', path);
    expect(initial.status).toBe(200);
    expect(initial.body.rates).toMatchObject({ profiles: 10, compliance: 1, events: 'unlimited' });
    expect(initial.body.overrides).toEqual({});

    const changed = await admin('patch', path).send({ profiles: 3, events: 2 });
    expect(changed.status).toBe(200);
    expect(changed.body.overrides).toEqual({ profiles: 3, events: 2 });
    expect(changed.body.rates).toMatchObject({ profiles: 3, events: 2, compliance: 1 });

    const profiles = await run(4, (i) => getProfile(acc, i));
    expectEdge(profiles, 3, 3);
    expect(profiles.answers[0]!.headers['ratelimit-limit']).toBe('3');
    const events = await run(3, async () =>
      toAnswer(
        await p
          .http()
          .post('/v3/events')
          .set('x-api-key', acc.publicKey)
          .send({ type: 'pageview', identifiers: { vuid: 'v' } }),
      ),
    );
    expectEdge(events, 2, 2);

    await admin('patch', path).send({ profiles: 'unlimited', events: null });
    const unlimited = await run(25, (i) => getProfile(acc, i));
    expect(unlimited.answers.every((a) => a.status === 404)).toBe(true);
    expect((await admin('get', path)).body.overrides).toEqual({ profiles: 'unlimited' });

    const bad = await admin('patch', path).send({ profiles: 0, nonsense: 5, events: 1.5 });
    expect(bad.status).toBe(400);
    expect(bad.body.detail.invalids.map((x: { field: string }) => x.field).sort()).toEqual([
      'events',
      'nonsense',
      'profiles',
    ]);
    expect((await admin('get', '/admin/v1/accounts/nobody/rate-limits')).status).toBe(404);
    expect((await p.http().get(path).set('x-api-key', acc.privateKey)).status).toBe(401);
  });

  if (_wiring === 'scaled out') {
    it('shares one bucket between two API processes on one Redis', async () => {
      const scaled = p as ScaledPlatform;
      const second = await ChildApp.start('apps/api/src/main.js', scaled.env());
      try {
        const acc = await account('replicas');
        const result = await run(11, async (i) => {
          const base = i % 2 ? second.baseUrl : scaled.api.baseUrl;
          const res = await fetch(`${base}/v3/profiles?email=n${i}@x.com`, {
            headers: { 'x-api-key': acc.privateKey },
          });
          return {
            status: res.status,
            headers: Object.fromEntries(res.headers.entries()),
            body: (await res.json()) as Answer['body'],
          };
        });
        expectEdge(result, 10, 10);
        // Both processes count down one bucket (a refill could only show in a run slower than 100 ms).
        if (result.ms < 100) {
          expect(result.answers.slice(0, 4).map((a) => a.headers['ratelimit-remaining'])).toEqual([
            '9',
            '8',
            '7',
            '6',
          ]);
        }
      } finally {
        await second.kill('SIGTERM');
      }
    });
  }
});
