import { loadConfig } from '@cdp/config';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { rateLimiterContract } from '../rate-limiter.contract.js';
import { RedisRateLimiter } from './redis-rate-limiter.adapter.js';

/** Runs against the Redis of the machine (REDIS_URL or 127.0.0.1:6379); it must be up under CI. */
let redis: RedisConnection;
beforeAll(async () => {
  redis = await connectRedis(loadConfig().redisUrl);
});
afterAll(async () => {
  await redis.close();
});

rateLimiterContract('redis', (now) => Promise.resolve(new RedisRateLimiter(redis, now)));

describe('RedisRateLimiter specifics', () => {
  it('shares one bucket between two clients (two API replicas) and expires idle buckets', async () => {
    const other = await connectRedis(loadConfig().redisUrl);
    try {
      const account = `shared${Math.random().toString(36).slice(2, 8)}`;
      const a = new RedisRateLimiter(redis);
      const b = new RedisRateLimiter(other);
      const allowance = { rate: 1, burst: 2 };
      expect((await a.take(account, 'profiles', allowance)).allowed).toBe(true);
      expect((await b.take(account, 'profiles', allowance)).allowed).toBe(true);
      expect((await a.take(account, 'profiles', allowance)).allowed).toBe(false);
      expect((await b.take(account, 'profiles', allowance)).allowed).toBe(false);
      const ttl = await redis.commands.pTTL(RedisRateLimiter.key(account, 'profiles'));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(3000);
    } finally {
      await other.close();
    }
  });

  it('loads its library again when Redis has lost it', async () => {
    const limiter = new RedisRateLimiter(redis);
    await limiter.take('reload', 'profiles', { rate: 5, burst: 5 });
    await redis.onEveryPrimary(['FUNCTION', 'DELETE', 'cdp_rate']);
    expect((await limiter.take('reload2', 'profiles', { rate: 5, burst: 5 })).allowed).toBe(true);
  });
});
