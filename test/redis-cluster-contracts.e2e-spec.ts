import { RedisConsentState, RedisIdentifierState } from '@cdp/consent/redis';
import { RedisIdempotencyStore } from '@cdp/idempotency/redis';
import { RedisIdentityIndex, RedisProfileState } from '@cdp/identity/redis';
import { RedisOrderState } from '@cdp/orders/redis';
import { RedisRateLimiter } from '@cdp/rate-limits/redis';
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
