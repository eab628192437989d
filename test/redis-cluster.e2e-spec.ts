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

// One wiring: a Redis Cluster is a scaled-out deployment; the embedded wiring has no Redis.
describe('scaled-out roles on a Redis Cluster', () => {
  let cluster: RedisClusterRig;
  let p: ScaledPlatform;
  /** A dozen accounts, four on each primary. */
  const accounts: TestAccount[] = [];
  const primaryOf = new Map<string, number>();
  /** The primary the failover test killed: later platforms are given it as their first seed. */
  let killed: number | undefined;

  beforeAll(async () => {
    cluster = await RedisClusterRig.start();
    // The single-tag index on a cluster, named: the default there (auto) is the sharded one, tested below.
    p = await ScaledPlatform.start({ REDIS_URL: cluster.seeds, CDP_IDENTITY_SHARDING: 'account' });
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
    killed = victim;
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
  it('one account sharded over every primary (the default on a cluster, CDP_IDENTITY_SHARDING=auto): started with a dead seed first; merges across primaries read back, and a primary SIGKILLed mid-ingestion loses and splits nothing', async () => {
    // Started after a node died, with that node first in its seed list (as an operator's unchanged
    // REDIS_URL would have it): the roles skip a seed that does not answer.
    const dead = `redis://127.0.0.1:${killed}`;
    const seeds = killed ? [dead, ...cluster.seeds.split(',').filter((s) => s !== dead)] : [cluster.seeds];
    const sharded = await ScaledPlatform.start({
      REDIS_URL: seeds.join(','),
    });
    try {
      const acc = await sharded.createAccount('one-big-account');
      const post = (path: string, body: unknown) =>
        fetch(sharded.url(path), {
          method: 'POST',
          headers: { 'x-api-key': acc.publicKey, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const profile = async (query: string) => {
        const res = await fetch(sharded.url(`/v3/profiles?${query}`), {
          headers: { 'x-api-key': acc.privateKey },
        });
        return { status: res.status, body: (await res.json()) as { attributes?: Record<string, unknown> } };
      };
      // Each round: 5 customers known by a vuid and 5 by an email, and an event naming the previous
      // round's pairs, which merges them (their identifiers hash to shards on different primaries).
      const created = new Map<number, boolean>();
      const mergedRounds: number[] = [];
      let round = 0;
      let sending = true;
      const sender = async () => {
        while (sending) {
          const r = round++;
          const pairs = Array.from({ length: 5 }, (_, i) => i);
          const made = await Promise.all(
            pairs.flatMap((i) => [
              post('/v3/profiles', { attributes: { vuid: `v${r}-${i}`, city: `city${r}-${i}` } }),
              post('/v3/profiles', { attributes: { email: `e${r}-${i}@x.com`, first_name: `F${r}-${i}` } }),
            ]),
          );
          created.set(
            r,
            made.every((res) => res.status === 202),
          );
          if (r > 0 && created.get(r - 1)) {
            const joined = await post(
              '/v3/events',
              pairs.map((i) => ({
                type: 'pageview',
                identifiers: { vuid: `v${r - 1}-${i}`, email: `e${r - 1}-${i}@x.com` },
              })),
            );
            if (joined.status === 202) mergedRounds.push(r - 1);
          }
        }
      };
      const sending$ = sender();
      try {
        await eventually(() => mergedRounds.length >= 3, 60_000);
        // A primary that holds some of the account's shards (once the processor wrote there) and still
        // has a replica to take over.
        const victim = await eventually(async () => {
          const primaries = await cluster.primaries();
          const held = await cluster.keysByPrimary(`cdp:{${acc.id}#*}:ids`);
          for (const [n, { port }] of primaries.entries()) {
            const replicated = /connected_slaves:[1-9]/.test(await cluster.cli(port, 'INFO', 'replication'));
            if (replicated && held[n]!.length > 0) return port;
          }
          return false;
        }, 30_000);
        await cluster.kill(victim);
        await cluster.waitUntilOk(60_000);
        const after = round;
        await eventually(() => mergedRounds.length >= 3 && round > after + 3, 90_000);
      } finally {
        sending = false;
        await sending$;
      }
      // Every acknowledged merge: both identifiers read back as one customer with both customers' attributes.
      for (const r of mergedRounds)
        for (let i = 0; i < 5; i++)
          await eventually(async () => {
            const [byVuid, byEmail] = await Promise.all([
              profile(`vuid=v${r}-${i}`),
              profile(`email=e${r}-${i}@x.com`),
            ]);
            return (
              byVuid.status === 200 &&
              byVuid.body.attributes?.city === `city${r}-${i}` &&
              byVuid.body.attributes?.first_name === `F${r}-${i}` &&
              JSON.stringify(byEmail.body) === JSON.stringify(byVuid.body)
            );
          }, 60_000);
      // The account's identity entries sit on every primary of the cluster as it is now.
      const owners = await cluster.keysByPrimary(`cdp:{${acc.id}#*}:ids`);
      expect(owners.filter((keys) => keys.length > 0)).toHaveLength((await cluster.primaries()).length);
    } finally {
      await sharded.close();
    }
  });
});
