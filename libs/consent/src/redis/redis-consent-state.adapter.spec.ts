import { loadConfig } from '@cdp/config';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { consentStateContract } from '../consent-state.contract.js';
import { RedisConsentState } from './redis-consent-state.adapter.js';

/** Runs against the Redis of the machine (REDIS_URL or 127.0.0.1:6379); it must be up under CI. */
let redis: RedisConnection;
beforeAll(async () => {
  redis = await connectRedis(loadConfig().redisUrl);
});
afterAll(async () => {
  await redis.close();
});

consentStateContract('redis', () => Promise.resolve(new RedisConsentState(redis)));
