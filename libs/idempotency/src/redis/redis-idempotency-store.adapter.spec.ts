import { loadConfig } from '@cdp/config';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { idempotencyStoreContract } from '../idempotency-store.contract.js';
import { RedisIdempotencyStore } from './redis-idempotency-store.adapter.js';

/** Runs against the Redis of the machine (REDIS_URL or 127.0.0.1:6379); it must be up under CI. */
let redis: RedisConnection;
beforeAll(async () => {
  redis = await connectRedis(loadConfig().redisUrl);
});
afterAll(async () => {
  await redis.close();
});

// The rules read the test's clock; Redis expires entries on its own, from the TTL given.
idempotencyStoreContract('redis', () => {
  const clock = { now: Date.now() };
  return Promise.resolve({ store: new RedisIdempotencyStore(redis, () => clock.now), clock });
});

describe('RedisIdempotencyStore', () => {
  it('is shared by two clients (two API replicas), and each entry expires on its own', async () => {
    const other = await connectRedis(loadConfig().redisUrl);
    try {
      const account = `shared${Math.random().toString(36).slice(2, 8)}`;
      const a = new RedisIdempotencyStore(redis);
      const b = new RedisIdempotencyStore(other);
      expect(await a.compareAndSet(account, 'k', undefined, '{"x":1}', Date.now() + 86_400_000)).toBe(true);
      expect(await b.compareAndSet(account, 'k', undefined, '{"x":2}', Date.now() + 86_400_000)).toBe(false);
      expect(await b.get(account, 'k')).toBe('{"x":1}');
      const ttl = await redis.commands.pTTL(RedisIdempotencyStore.key(account, 'k'));
      expect(ttl).toBeGreaterThan(86_000_000);
      expect(ttl).toBeLessThanOrEqual(86_400_000);
      // Deleting leaves nothing behind either.
      expect(await b.compareAndSet(account, 'k', '{"x":1}', undefined, Date.now() + 86_400_000)).toBe(true);
      expect(await redis.commands.exists(RedisIdempotencyStore.key(account, 'k'))).toBe(0);
    } finally {
      await other.close();
    }
  });

  it("spreads one account's records over its shards (one hash tag per shard of the client's key)", () => {
    const tags = new Set(
      Array.from(
        { length: 2000 },
        (_, i) => /\{([^}]*)\}/.exec(RedisIdempotencyStore.key('big', `k${i}`))![1]!,
      ),
    );
    // The shard is CRC32 of the key, so this is fixed: these 2,000 keys hit every one of the 256 shards.
    expect(tags.size).toBe(256);
    expect([...tags].every((t) => /^big#[0-9a-f]{2}$/.test(t))).toBe(true);
  });

  it('still honours a record written before the sharding, and moves it on its first change', async () => {
    const account = `legacy${Math.random().toString(36).slice(2, 8)}`;
    const store = new RedisIdempotencyStore(redis);
    const legacy = RedisIdempotencyStore.legacyKey(account, 'k');
    const until = Date.now() + 60_000;
    await redis.commands.set(legacy, '{"old":1}', { PX: 60_000 });
    expect(await store.get(account, 'k')).toBe('{"old":1}');
    expect(await store.compareAndSet(account, 'k', '{"other":1}', '{"n":1}', until)).toBe(false);
    // Two replicas taking it over from the same read: one wins.
    const [a, b] = await Promise.all([
      store.compareAndSet(account, 'k', '{"old":1}', '{"n":1}', until),
      store.compareAndSet(account, 'k', '{"old":1}', '{"n":2}', until),
    ]);
    expect([a, b].filter(Boolean)).toHaveLength(1);
    const winner = a ? '{"n":1}' : '{"n":2}';
    expect(await store.get(account, 'k')).toBe(winner);
    expect(await redis.commands.exists(legacy)).toBe(0);
    expect(await redis.commands.get(RedisIdempotencyStore.key(account, 'k'))).toBe(winner);
    // Deleted, it is gone for good: the legacy record does not show through.
    expect(await store.compareAndSet(account, 'k', winner, undefined, until)).toBe(true);
    expect(await store.get(account, 'k')).toBeUndefined();
  });
});
