import { jest } from '@jest/globals';
import type { TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { RedisClusterRig } from './support/redis-cluster.js';
import { ScaledPlatform } from './support/scaled.js';

/**
 * The scaled-out roles on a Redis Cluster (3 primaries, 3 replicas on loopback), given its seed list:
 * accounts on every primary work, and a primary killed during ingestion fails over without losing
 * anything acknowledged, while health says not ready until every slot is served again.
 */
jest.setTimeout(180_000);

describe('scaled-out roles on a Redis Cluster', () => {
  let cluster: RedisClusterRig;
  let p: ScaledPlatform;
  /** A dozen accounts, four on each primary. */
  const accounts: TestAccount[] = [];
  const primaryOf = new Map<string, number>();

  beforeAll(async () => {
    cluster = await RedisClusterRig.start();
    p = await ScaledPlatform.start({ REDIS_URL: cluster.seeds });
    const byPrimary = new Map<number, TestAccount[]>();
    for (let n = 0; accounts.length < 12; n++) {
      if (n > 200) throw new Error('could not place four accounts on every primary');
      const acc = await p.createAccount(`cluster${n}`);
      const port = await cluster.primaryOf(`cdp:{${acc.id}}:ids`);
      const here = byPrimary.get(port) ?? [];
      if (here.length === 4) continue;
      here.push(acc);
      byPrimary.set(port, here);
      accounts.push(acc);
      primaryOf.set(acc.id, port);
    }
  }, 120_000);
  afterAll(async () => {
    await p?.close();
    await cluster?.stop();
  }, 60_000);

  const postProfiles = (acc: TestAccount, profiles: { email: string; city: string }[]) =>
    fetch(p.url('/v3/profiles'), {
      method: 'POST',
      headers: { 'x-api-key': acc.publicKey, 'content-type': 'application/json' },
      body: JSON.stringify(profiles.map((attributes) => ({ attributes }))),
    });
  const readProfile = async (acc: TestAccount, email: string) => {
    const res = await fetch(p.url(`/v3/profiles?email=${encodeURIComponent(email)}`), {
      headers: { 'x-api-key': acc.privateKey },
    });
    return { status: res.status, body: (await res.json()) as { attributes?: Record<string, unknown> } };
  };
  /** Every profile reads back with its city (polled: ingestion is asynchronous). */
  const everyProfileReadsBack = async (written: Map<TestAccount, Map<string, string>>) => {
    for (const [acc, profiles] of written)
      for (const [email, city] of profiles)
        await eventually(async () => {
          const res = await readProfile(acc, email);
          return res.status === 200 && res.body.attributes?.city === city;
        }, 60_000);
  };

  it('serves accounts whose slots lie on every primary: every profile reads back', async () => {
    expect(new Set(primaryOf.values()).size).toBe(3);
    const written = new Map<TestAccount, Map<string, string>>();
    for (const acc of accounts) {
      const profiles = Array.from({ length: 10 }, (_, i) => ({
        email: `c${i}@${acc.id}.x`,
        city: `city${i}`,
      }));
      expect((await postProfiles(acc, profiles)).status).toBe(202);
      written.set(acc, new Map(profiles.map((x) => [x.email, x.city])));
    }
    await everyProfileReadsBack(written);
    // The processor acknowledged its batches only after a replica confirmed them.
    let waits = 0;
    for (const { port } of await cluster.primaries())
      waits += Number(
        /cmdstat_wait:calls=(\d+)/.exec(await cluster.cli(port, 'INFO', 'commandstats'))?.[1] ?? 0,
      );
    expect(waits).toBeGreaterThan(0);
    for (const base of [p.api.baseUrl, p.processor!.baseUrl]) {
      const ready = await fetch(`${base}/health/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({
        drivers: { identity: { driver: 'redis-cluster', ready: true } },
      });
    }
  });

  it('a primary SIGKILLed during ingestion fails over: nothing acknowledged is lost, health goes not-ready and back', async () => {
    const victim = primaryOf.get(accounts[0]!.id)!;
    const acknowledged = new Map<TestAccount, Map<string, string>>(accounts.map((a) => [a, new Map()]));
    const refusals: { status: number; retryAfter: string | null }[] = [];
    let sending = true;
    let round = 0;
    const sender = async () => {
      while (sending) {
        const r = round++;
        await Promise.all(
          accounts.map(async (acc) => {
            const profiles = Array.from({ length: 5 }, (_, i) => ({
              email: `f${r}-${i}@${acc.id}.x`,
              city: `r${r}`,
            }));
            const res = await postProfiles(acc, profiles);
            if (res.status === 202) for (const x of profiles) acknowledged.get(acc)!.set(x.email, x.city);
            else refusals.push({ status: res.status, retryAfter: res.headers.get('retry-after') });
          }),
        );
      }
    };
    const readiness = { api: [] as number[], processor: [] as number[] };
    let watching = true;
    const watcher = async () => {
      while (watching) {
        for (const [role, base] of [
          ['api', p.api.baseUrl],
          ['processor', p.processor!.baseUrl],
        ] as const) {
          const status = (await fetch(`${base}/health/ready`).catch(() => undefined))?.status ?? 0;
          const seen = readiness[role];
          if (seen[seen.length - 1] !== status) seen.push(status);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const sending$ = sender();
    const watching$ = watcher();
    try {
      // Some ingestion acknowledged before the kill, then the primary goes without a word.
      await eventually(() => [...acknowledged.values()].every((m) => m.size >= 10), 30_000);
      const killedAt = Date.now();
      await cluster.kill(victim);
      await cluster.waitUntilOk(60_000);
      const failoverMs = Date.now() - killedAt;
      // Both roles saw the failover and are ready again.
      await eventually(
        () =>
          readiness.api.includes(503) &&
          readiness.processor.includes(503) &&
          readiness.api.at(-1) === 200 &&
          readiness.processor.at(-1) === 200,
        60_000,
      );
      // Ingestion after the failover, on every account, the promoted replica's included.
      const after = round;
      await eventually(() => round > after + 3, 60_000);
      console.info(
        `failover: cluster ok ${failoverMs} ms after the kill; refused during it: ${refusals.length}; ` +
          `readiness api ${readiness.api.join('>')}, processor ${readiness.processor.join('>')}`,
      );
    } finally {
      sending = false;
      await sending$;
      watching = false;
      await watching$;
    }
    for (const refusal of refusals) {
      expect(refusal.status).toBeGreaterThanOrEqual(500);
      expect(refusal.retryAfter).not.toBeNull();
    }
    await everyProfileReadsBack(acknowledged);
  });
});
