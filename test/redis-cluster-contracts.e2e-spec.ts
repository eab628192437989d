import { RedisConsentState, RedisIdentifierState } from '@cdp/consent/redis';
import { RedisIdempotencyStore } from '@cdp/idempotency/redis';
import { RedisIdentityIndex, RedisProfileState } from '@cdp/identity/redis';
import { RedisOrderState } from '@cdp/orders/redis';
import { RedisRateLimiter } from '@cdp/rate-limits/redis';
import { configureFaults, InjectedFault, parseFaults, PROFILE_POINTS } from '@cdp/faults';
import { accountShard } from '@cdp/redis';
import { consentStateContract } from '../libs/consent/src/consent-state.contract.js';
import { identifierStateContract } from '../libs/consent/src/identifier-state.contract.js';
import { idempotencyStoreContract } from '../libs/idempotency/src/idempotency-store.contract.js';
import {
  graphRows,
  identityIndexContract,
  profileStateContract,
  record,
} from '../libs/identity/src/identity.contract.js';
import { ORDER_CONTRACT_ACCOUNTS, orderStateContract } from '../libs/orders/src/order-state.contract.js';
import { rateLimiterContract } from '../libs/rate-limits/src/rate-limiter.contract.js';
import { clusterForFile } from './support/redis-cluster.js';

/**
 * The Redis drivers' contract suites on a Redis Cluster (3 primaries, 3 replicas on loopback), through
 * the same connection factory the roles use, given the cluster's seed list: every account's keys go to
 * the primary of its slot, and the function libraries are on every primary.
 */
const file = clusterForFile();

/** Two customer ids on different account shards, hence (mostly) different primaries. */
function crossShardPair(): [string, string] {
  const s = `s-${Math.random().toString(36).slice(2, 8)}`;
  for (let i = 0; ; i++) if (accountShard(`l-${i}`) !== accountShard(s)) return [s, `l-${i}`];
}

async function* none<T>(): AsyncIterable<T> {}

identityIndexContract('redis cluster', async (accounts) => {
  const index = new RedisIdentityIndex(file.redis);
  for (const account of accounts) {
    await index.beginRebuild(account);
    await index.load(account, graphRows([]));
  }
  return index;
});
profileStateContract('redis cluster', () =>
  Promise.resolve(new RedisProfileState(file.redis, { requireLoaded: false })),
);
consentStateContract('redis cluster', () => Promise.resolve(new RedisConsentState(file.redis)));
identifierStateContract('redis cluster', () => Promise.resolve(new RedisIdentifierState(file.redis)));
orderStateContract('redis cluster', async () => {
  const state = new RedisOrderState(file.redis, 400 * 86_400_000);
  for (const account of ORDER_CONTRACT_ACCOUNTS) {
    await state.beginRebuild(account);
    await state.load(account, none());
  }
  return state;
});
idempotencyStoreContract('redis cluster', () => {
  const clock = { now: Date.now() };
  return Promise.resolve({ store: new RedisIdempotencyStore(file.redis, () => clock.now), clock });
});
rateLimiterContract('redis cluster', (now) => Promise.resolve(new RedisRateLimiter(file.redis, now)));

// One wiring: the Redis drivers under test are the scaled-out wiring's; the embedded one has no Redis.
describe('the Redis connection on a cluster', () => {
  it('finds the cluster from its seed list and reports every primary healthy', async () => {
    expect(file.redis.isCluster).toBe(true);
    expect(await file.redis.health()).toEqual({ driver: 'redis-cluster', ready: true });
  });

  it('loads a library again on every primary when a node lost it, and the call goes through', async () => {
    const limiter = new RedisRateLimiter(file.redis);
    await limiter.take('reload', 'profiles', { rate: 5, burst: 5 });
    await file.redis.onEveryPrimary(['FUNCTION', 'DELETE', 'cdp_rate']);
    // Accounts on every primary: each call meets a node without the library.
    for (let i = 0; i < 12; i++)
      expect((await limiter.take(`reload${i}`, 'profiles', { rate: 5, burst: 5 })).allowed).toBe(true);
  });

  it("spreads one account's idempotency records and rate-limit buckets over every primary", async () => {
    const account = `spread${Math.random().toString(36).slice(2, 8)}`;
    const store = new RedisIdempotencyStore(file.redis);
    const until = Date.now() + 60_000;
    for (let i = 0; i < 600; i++)
      expect(await store.compareAndSet(account, `key-${i}`, undefined, `{"n":${i}}`, until)).toBe(true);
    const limiter = new RedisRateLimiter(file.redis);
    for (const family of ['profiles', 'events', 'exports', 'subscriptions'])
      await limiter.take(account, family, { rate: 5, burst: 5 });
    // Each primary's share of the account's keys (SCAN on each; the account's name is unique to the run).
    const counts = (await file.cluster.keysByPrimary(`cdp:{${account}#*`)).map((keys) => keys.length);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(604);
    for (const count of counts) {
      expect(count / 604).toBeGreaterThan(0.2);
      expect(count / 604).toBeLessThan(0.5);
    }
    // Every record reads back through the driver, wherever it lives.
    for (let i = 0; i < 600; i += 37) expect(await store.get(account, `key-${i}`)).toBe(`{"n":${i}}`);
  });

  it("spreads one account's list memberships over every primary, and reads them all back", async () => {
    const account = `members${Math.random().toString(36).slice(2, 8)}`;
    const state = new RedisConsentState(file.redis);
    const changes = Array.from({ length: 600 }, (_, i) => ({
      customerId: `c-${i}`,
      listId: 'news',
      subscribed: i % 3 !== 0,
      at: 1000 + i,
    }));
    expect((await state.apply(account, changes)).map((c) => c.version)).toEqual(changes.map(() => 1));
    const counts = (await file.cluster.keysByPrimary(`cdp:{${account}#*}:consent:*`)).map(
      (keys) => keys.length,
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(600);
    for (const count of counts) {
      expect(count / 600).toBeGreaterThan(0.2);
      expect(count / 600).toBeLessThan(0.5);
    }
    const seen = new Map<string, boolean>();
    for await (const s of state.customers(account)) seen.set(s.customerId, s.lists.news!);
    expect(seen.size).toBe(600);
    for (const c of changes) expect(seen.get(c.customerId)).toBe(c.subscribed);
  });

  it("spreads one account's orders over every primary, a batch being one call per shard it touches", async () => {
    const account = `ospread${Math.random().toString(36).slice(2, 8)}`;
    const state = new RedisOrderState(file.redis, 400 * 86_400_000);
    await state.beginRebuild(account);
    await state.load(account, none());
    const purchase = (i: number) => ({
      id: `p${i}`,
      orderId: `order-${i}`,
      kind: 'event' as const,
      action: 'purchase' as const,
      ts: i,
      subtotal: 10_000,
      fields: {},
    });
    for (let b = 0; b < 6; b++) {
      const batch = Array.from({ length: 100 }, (_, i) => purchase(b * 100 + i));
      const fcalls = await calls('fcall');
      const { outcomes } = await state.apply(account, batch);
      expect(outcomes.every((o) => o.applied && o.seq === 1)).toBe(true);
      // A call may touch one slot: one per shard the batch touches (a single server takes one in all).
      expect((await calls('fcall')) - fcalls).toBe(new Set(batch.map((c) => accountShard(c.orderId))).size);
    }
    // Each primary's share of the account's order hashes (SCAN on each; the account is unique to the run).
    const counts = (await file.cluster.keysByPrimary(`cdp:{${account}#*}:o:*`)).map((keys) => keys.length);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(600);
    for (const count of counts) {
      expect(count / 600).toBeGreaterThan(0.2);
      expect(count / 600).toBeLessThan(0.5);
    }
    // Every order reads back through the driver, and a redelivered batch moves nothing.
    for (let i = 0; i < 600; i += 37) expect((await state.get(account, `order-${i}`))!.version).toBe(1);
    const again = await state.apply(account, [purchase(5), purchase(555)]);
    expect(again.outcomes.map((o) => o.applied)).toEqual([false, false]);
    // A rebuild clears every shard's orders (found from the shards' indexes) and opens every shard again.
    await state.beginRebuild(account);
    await state.load(account, none());
    await state.endRebuild(account);
    const left = (await file.cluster.keysByPrimary(`cdp:{${account}#*`)).flat();
    expect(left.filter((key) => !key.endsWith('}:orders-ready'))).toEqual([]);
    expect(left).toHaveLength(256);
  });

  it("spreads one account's opt-out pool over every primary, asked and added to per shard set", async () => {
    const account = `pspread${Math.random().toString(36).slice(2, 8)}`;
    const profiles = new RedisProfileState(file.redis, { requireLoaded: false });
    const email = (i: number) => ({ kind: 'email', value: `c${i}@example.com` });
    const opted = Array.from({ length: 600 }, (_, i) => email(2 * i));
    await profiles.addToOptOutPool(account, opted);
    const sets = await file.cluster.keysByPrimary(`cdp:{${account}#*}:optout`);
    expect(sets.flat()).toHaveLength(new Set(opted.map((id) => accountShard(`email:${id.value}`))).size);
    for (const onPrimary of sets) expect(onPrimary.length / sets.flat().length).toBeGreaterThan(0.2);
    const asked = Array.from({ length: 1200 }, (_, i) => email(i));
    expect(await profiles.inOptOutPool(account, asked)).toEqual(asked.filter((_, i) => i % 2 === 0));
  });

  it("spreads one account's profiles over every primary; merges across shards fold, then retire the loser", async () => {
    const account = `prof${Math.random().toString(36).slice(2, 8)}`;
    const profiles = new RedisProfileState(file.redis);
    await profiles.load(account, none());
    const batch = Array.from({ length: 600 }, (_, i) => ({
      customerId: `c-${i}`,
      update: { email: `c${i}@x.com`, phone: `+47${i % 10}` },
      at: i + 1,
    }));
    await profiles.apply(account, batch);
    const counts = (await file.cluster.keysByPrimary(`cdp:{${account}#*}:p:*`)).map((keys) => keys.length);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(600);
    for (const count of counts) {
      expect(count / 600).toBeGreaterThan(0.2);
      expect(count / 600).toBeLessThan(0.5);
    }
    // Every customer with a phone, whichever shard holds it.
    expect(await profiles.customersWithPhone(account, '+473')).toEqual(
      batch
        .filter((_, i) => i % 10 === 3)
        .map((u) => u.customerId)
        .sort(),
    );
    // Merges whose losers live on other shards than their survivors, one changed earlier in the batch.
    const pairs = Array.from({ length: 50 }, (_, i) => [`c-${2 * i}`, `c-${2 * i + 1}`] as const);
    expect(pairs.filter(([s, l]) => accountShard(s) !== accountShard(l)).length).toBeGreaterThan(45);
    const merges = [
      { customerId: 'c-1', update: { city: 'Oslo' }, at: 1000 },
      ...pairs.map(([s, l], i) => ({ customerId: s, update: {}, absorb: [l], at: 1001 + i })),
    ];
    const rows = await profiles.apply(account, merges);
    for (const [s, l] of pairs) {
      const n = Number(l.slice(2));
      expect(rows.find((r) => r.customerId === l)).toMatchObject({ mergedInto: s });
      expect(await profiles.get(account, l)).toBeUndefined();
      // The field written later wins, whichever customer it was written on: the loser's (and c-1's city).
      expect((await profiles.get(account, s))?.attributes).toEqual({
        email: `c${n}@x.com`,
        phone: `+47${n % 10}`,
        ...(l === 'c-1' ? { city: 'Oslo' } : {}),
      });
    }
    const withPhone3: string[] = [
      ...pairs.filter(([, l]) => Number(l.slice(2)) % 10 === 3).map(([s]) => s),
      ...batch.filter((_, i) => i % 10 === 3 && i >= 100).map((u) => u.customerId),
    ];
    expect(await profiles.customersWithPhone(account, '+473')).toEqual(withPhone3.sort());
    // A rebuild clears every shard's profiles and opens every shard again.
    await profiles.load(account, none());
    const left = (await file.cluster.keysByPrimary(`cdp:{${account}#*`)).flat();
    expect(left.filter((key) => !key.endsWith('}:pready') && !key.includes('}:pm:'))).toEqual([]);
  });

  it('a crash between the fold and the retirement of a loser on another shard loses and doubles nothing', async () => {
    const account = `pcrash${Math.random().toString(36).slice(2, 8)}`;
    const profiles = new RedisProfileState(file.redis);
    await profiles.load(account, none());
    const [s, l] = crossShardPair();
    await profiles.apply(account, [
      { customerId: s, update: { email: 's@x.com' }, at: 1 },
      { customerId: l, update: { email: 'l@x.com', phone: '+4799', city: 'Rome' }, at: 2 },
    ]);
    const merge = { customerId: s, update: { zip: '0150' }, absorb: [l], at: 3 };
    configureFaults(parseFaults(`${PROFILE_POINTS.folded}:throw`));
    try {
      await expect(profiles.apply(account, [merge])).rejects.toBeInstanceOf(InjectedFault);
    } finally {
      configureFaults([]);
    }
    // Folded, not yet retired: a read given the merge answers it whole, the loser still answers alone.
    const whole = { email: 'l@x.com', phone: '+4799', city: 'Rome', zip: '0150' };
    expect((await profiles.get(account, s, [l]))?.attributes).toEqual(whole);
    expect((await profiles.get(account, l))?.attributes.city).toBe('Rome');
    // The redelivery folds it again (no change) and retires it; a second one gives the same rows.
    const rows = await profiles.apply(account, [merge]);
    expect(rows.map((r) => [r.customerId, r.mergedInto, r.attributes])).toEqual([
      [l, s, { email: 'l@x.com', phone: '+4799', city: 'Rome' }],
      [s, undefined, whole],
    ]);
    const again = await profiles.apply(account, [merge]);
    expect(again[0]).toEqual(rows[0]);
    expect(again[1]!.attributes).toEqual(whole);
    expect(await profiles.get(account, l)).toBeUndefined();
    expect(await profiles.customersWithPhone(account, '+4799')).toEqual([s]);
  });

  it('a loser changed between its read and its retirement is folded again, so the change is not lost', async () => {
    const account = `prace${Math.random().toString(36).slice(2, 8)}`;
    const late = new RedisProfileState(file.redis);
    await late.load(account, none());
    const [s, l] = crossShardPair();
    await late.apply(account, [
      { customerId: s, update: { email: 's@x.com' }, at: 1 },
      { customerId: l, update: { email: 'l@x.com' }, at: 2 },
    ]);
    // Another processor applies an update resolved to the loser before the merge, right after the merge
    // read the loser: the interleaving, made certain by answering that read only after the update.
    let interleaved = false;
    const commands = new Proxy(file.redis.commands, {
      get(target, prop) {
        if (prop !== 'hGetAll') return Reflect.get(target, prop, target) as unknown;
        return async (key: string) => {
          const hash = await target.hGetAll(key);
          if (!interleaved && key.endsWith(`}:p:${l}`)) {
            interleaved = true;
            await late.apply(account, [{ customerId: l, update: { city: 'Rome' }, at: 3 }]);
          }
          return hash;
        };
      },
    });
    const merging = new RedisProfileState(
      Object.create(file.redis, { commands: { value: commands } }) as typeof file.redis,
    );
    const rows = await merging.apply(account, [{ customerId: s, update: {}, absorb: [l], at: 4 }]);
    expect(interleaved).toBe(true);
    expect((await late.get(account, s))?.attributes).toEqual({ email: 'l@x.com', city: 'Rome' });
    expect(await late.get(account, l)).toBeUndefined();
    expect(rows.find((r) => r.customerId === l)).toMatchObject({
      mergedInto: s,
      attributes: { email: 'l@x.com', city: 'Rome' },
    });
    expect(rows.find((r) => r.customerId === s)?.attributes).toEqual({ email: 'l@x.com', city: 'Rome' });
  });

  it('acknowledges a batch only once a replica holds it (WAIT 1), and says what that costs a batch', async () => {
    const index = new RedisIdentityIndex(file.redis);
    const account = `wait${Math.random().toString(36).slice(2, 8)}`;
    await index.beginRebuild(account);
    await index.load(account, graphRows([]));
    const waitsBefore = await calls('wait');
    const batches = 200;
    let resolving = 0;
    let settling = 0;
    for (let b = 0; b < batches; b++) {
      const records = Array.from({ length: 20 }, (_, i) =>
        record([{ kind: 'email', value: `c${b}-${i}@x.com` }], `s${b}-${i}`, `m${b}`, i),
      );
      const t0 = performance.now();
      await index.resolve(account, records);
      const t1 = performance.now();
      await index.settle(account, [`m${b}`]);
      resolving += t1 - t0;
      settling += performance.now() - t1;
    }
    expect((await calls('wait')) - waitsBefore).toBeGreaterThanOrEqual(batches);
    let waiting = 0;
    for (let b = 0; b < batches; b++) {
      const t0 = performance.now();
      await file.redis.waitForReplica(`cdp:{${account}}:ready`, 2000);
      waiting += performance.now() - t0;
    }
    console.info(
      `per batch of 20 records: resolve ${(resolving / batches).toFixed(2)} ms, settle with WAIT ` +
        `${(settling / batches).toFixed(2)} ms, of which WAIT alone ${(waiting / batches).toFixed(2)} ms`,
    );
  });
});

/** How many times the primaries ran `command`, together (INFO commandstats). */
async function calls(command: string): Promise<number> {
  const stats = await file.redis.onEveryPrimary(['INFO', 'commandstats']);
  const pattern = new RegExp(`cmdstat_${command}:calls=(\\d+)`);
  return stats.reduce<number>((sum, text) => sum + Number(pattern.exec(String(text))?.[1] ?? 0), 0);
}
