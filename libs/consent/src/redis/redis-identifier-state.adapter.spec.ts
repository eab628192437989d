import { loadConfig } from '@cdp/config';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { identifierStateContract } from '../identifier-state.contract.js';
import { RedisIdentifierState } from './redis-identifier-state.adapter.js';

/** Runs against the Redis of the machine (REDIS_URL or 127.0.0.1:6379); it must be up under CI. */
let redis: RedisConnection;
beforeAll(async () => {
  redis = await connectRedis(loadConfig().redisUrl);
});
afterAll(async () => {
  await redis.close();
});

identifierStateContract('redis', () => Promise.resolve(new RedisIdentifierState(redis)));
