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
});
