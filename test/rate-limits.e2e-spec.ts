import { connectRedis } from '@cdp/redis';
import { RedisRateLimiter } from '@cdp/rate-limits/redis';
import { ChildApp } from './support/child-process.js';
import { ADMIN_TOKEN, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { ScaledPlatform } from './support/scaled.js';
import { type Platform, WIRINGS } from './support/wirings.js';
import { postWithKey } from './support/api-calls.js';
import { expectTooManyRequests } from './support/answers.js';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: { detail?: { message?: string } };
}

/** Sends `n` requests one after the other. */
async function sendAll(n: number, send: (i: number) => Promise<Answer>): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let i = 0; i < n; i++) answers.push(await send(i));
  return answers;
}

/**
 * Sends requests one after the other until the first 429: the edge is reached by count, however fast
 * or slow the run (tokens come back at `rate` per second, so a slow run needs only more requests).
 */
async function runToEdge(limit: number, send: (i: number) => Promise<Answer>): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let i = 0; i < 20 * limit + 20; i++) {
    const answer = await send(i);
    answers.push(answer);
    if (answer.status === 429) return answers;
  }
  throw new Error(`no 429 in ${answers.length} requests against a limit of ${limit}`);
}

/**
 * The bucket arithmetic, as the RateLimit-* headers report it (no wall clock): the bucket starts
 * full (`limit`, the first request leaves limit - 1), each request takes one token (`remaining`
 * never drops by more than one), at least `limit` pass, and the first refusal comes only when the
 * answer before it had left the bucket empty.
 */
function expectEdge(answers: Answer[], limit: number): void {
  const passed = answers.slice(0, -1);
  const refused = answers.at(-1)!;
  expect(refused.status).toBe(429);
  expect(passed.every((a) => a.status !== 429)).toBe(true);
  expect(passed.length).toBeGreaterThanOrEqual(limit);
  expect(answers.every((a) => a.headers['ratelimit-limit'] === String(limit))).toBe(true);
  const remaining = passed.map((a) => Number(a.headers['ratelimit-remaining']));
  expect(remaining[0]).toBe(limit - 1);
  for (let i = 1; i < remaining.length; i++) {
    expect(remaining[i]).toBeGreaterThanOrEqual(remaining[i - 1]! - 1);
    expect(remaining[i]).toBeLessThan(limit);
  }
  expect(remaining.at(-1)).toBe(0);
  expect(refused.headers['ratelimit-remaining']).toBe('0');
}

describe.each(WIRINGS)('rate limits per account and API family (%s)', (_wiring, start) => {
  let p: Platform;

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
    toAnswer(await postWithKey(p, acc.publicKey, '/v3/profiles', { attributes: { email: `rl${i}@x.com` } }));
  /** An account whose key is already cached by the API (an unlimited request), so a run measures the limit only. */
  const account = async (name: string): Promise<TestAccount> => {
    const acc = await p.createAccount(name, {}); // the spec's default rates
    const warm = await postWithKey(p, acc.privateKey, '/v3/events', {
      type: 'warm',
      identifiers: { vuid: 'warm' },
    });
    expect(warm.status).toBe(202);
    return acc;
  };
  const admin = (method: 'get' | 'patch', path: string) =>
    p.http()[method](path).set('authorization', `Bearer ${ADMIN_TOKEN}`);

  it('lets 10 profile requests a second through; the 11th gets 429 with Retry-After and RateLimit-*', async () => {
    const acc = await account('ten');
    const result = await runToEdge(10, (i) => getProfile(acc, i));
    expectEdge(result, 10);
    const passed = result.slice(0, 10);
    expect(passed.map((a) => a.status)).toEqual(Array<number>(10).fill(404));
    expect(passed[0]!.headers['ratelimit-limit']).toBe('10');
    expect(passed[0]!.headers['ratelimit-remaining']).toBe('9');
    const last = result.at(-1)!;
    expect(last.headers['content-type']).toMatch(/^application\/json/);
    expectTooManyRequests(last, 10, 'profiles');
  });

  it('leaves other accounts alone, and lets the bucket refill', async () => {
    const a = await account('busy');
    const b = await account('quiet');
    const burst = await runToEdge(10, (i) => getProfile(a, i));
    expect(burst.at(-1)!.status).toBe(429);
    // The other account has its whole allowance.
    expectEdge(await runToEdge(10, (i) => getProfile(b, i)), 10);
    // A token comes back (Retry-After: 1 said when): polled, not timed.
    const again = await eventually(async () => {
      const answer = await getProfile(a);
      if (answer.status === 429) throw new Error('no token back yet');
      return answer;
    });
    expect(again.status).toBe(404);
    // How many tokens came back by then depends on how late the poll ran (10 a second), so only what
    // holds whatever the timing is checked: the request took one, so the bucket is not full.
    expect(again.headers['ratelimit-limit']).toBe('10');
    expect(Number(again.headers['ratelimit-remaining'])).toBeLessThan(10);
  });

  it('counts reads and writes of /v3/profiles in one bucket, and never limits events by default', async () => {
    const acc = await account('mixed');
    const result = await runToEdge(10, (i) => (i % 2 ? getProfile(acc, i) : postProfile(acc, i)));
    expectEdge(result, 10);
    expect(result.slice(0, 10).map((a) => a.status)).toEqual([
      202, 404, 202, 404, 202, 404, 202, 404, 202, 404,
    ]);
    const events = await sendAll(40, async () =>
      toAnswer(
        await postWithKey(p, acc.publicKey, '/v3/events', {
          type: 'pageview',
          identifiers: { vuid: 'v' },
          data: { page: '/' },
        }),
      ),
    );
    expect(events.every((a) => a.status === 202)).toBe(true);
    expect(events[0]!.headers['ratelimit-limit']).toBeUndefined();
  });

  it('spends no token on a request that is not authenticated', async () => {
    const acc = await account('unauth');
    for (let i = 0; i < 15; i++) {
      expect((await p.http().get('/v3/profiles?email=a@x.com').set('x-api-key', 'nobody')).status).toBe(401);
    }
    expectEdge(await runToEdge(10, (i) => getProfile(acc, i)), 10);
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

    const profiles = await runToEdge(3, (i) => getProfile(acc, i));
    expectEdge(profiles, 3);
    expect(profiles[0]!.headers['ratelimit-limit']).toBe('3');
    const events = await runToEdge(2, async () =>
      toAnswer(
        await postWithKey(p, acc.publicKey, '/v3/events', { type: 'pageview', identifiers: { vuid: 'v' } }),
      ),
    );
    expectEdge(events, 2);

    await admin('patch', path).send({ profiles: 'unlimited', events: null });
    const unlimited = await sendAll(25, (i) => getProfile(acc, i));
    expect(unlimited.every((a) => a.status === 404)).toBe(true);
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

  // Scaled out only: two API processes on one Redis; embedded, there is one process.
  if (_wiring === 'scaled out') {
    it('shares one bucket between two API processes on one Redis', async () => {
      const scaled = p as ScaledPlatform;
      const second = await ChildApp.start('apps/api/src/main.js', scaled.env());
      try {
        const acc = await account('replicas');
        // After each request, the bucket as Redis holds it: milli-tokens and the time of their count.
        const redis = await connectRedis(scaled.redis.url);
        const bucket: { m: number; at: number }[] = [];
        let result: Answer[];
        try {
          result = await runToEdge(10, async (i) => {
            const base = i % 2 ? second.baseUrl : scaled.api.baseUrl;
            const res = await fetch(`${base}/v3/profiles?email=n${i}@x.com`, {
              headers: { 'x-api-key': acc.privateKey },
            });
            const state = await redis.commands.hGetAll(RedisRateLimiter.key(acc.id, 'profiles'));
            bucket.push({ m: Number(state.m), at: Number(state.at) });
            return {
              status: res.status,
              headers: Object.fromEntries(res.headers.entries()),
              body: (await res.json()) as Answer['body'],
            };
          });
        } finally {
          await redis.close();
        }
        expectEdge(result, 10);
        // Each process takes from what the other left: the state after a request is the state after
        // the one before (sent to the other process), refilled at 10/s for the time between, less one
        // token when allowed; and the remaining each answer reports is that shared state.
        expect(bucket[0]!.m).toBe(9000);
        for (let i = 1; i < bucket.length; i++) {
          const refilled = Math.min(10_000, bucket[i - 1]!.m + (bucket[i]!.at - bucket[i - 1]!.at) * 10);
          const allowed = result[i]!.status !== 429;
          expect(bucket[i]!.m).toBe(allowed ? refilled - 1000 : refilled);
        }
        result.forEach((a, i) => {
          expect(a.headers['ratelimit-remaining']).toBe(String(Math.floor(bucket[i]!.m / 1000)));
        });
      } finally {
        await second.kill('SIGTERM');
      }
    });
  }
});
