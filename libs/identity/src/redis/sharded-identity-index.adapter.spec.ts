import { loadConfig } from '@cdp/config';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { createClient } from 'redis';
import { shardedIdentityContract } from './sharded-identity.contract.js';

/**
 * The sharded identity index on a single Redis (the machine's: REDIS_URL or 127.0.0.1:6379; it must be
 * up under CI), where a read or a phase covers every shard in one call. The cluster's run is
 * test/redis-sharded-identity.e2e-spec.ts.
 */
const url = loadConfig().redisUrl;
let redis: RedisConnection;
beforeAll(async () => {
  redis = await connectRedis(url);
});

const { accounts } = shardedIdentityContract('redis, sharded', () => redis, 150);

afterAll(async () => {
  await redis.close();
  // The suite's accounts, every key of them (account tag and shard tags).
  const client = createClient({ url });
  await client.connect();
  for (const account of accounts)
    for await (const batch of client.scanIterator({ MATCH: `cdp:{${account}[}#]*`, COUNT: 1000 }))
      if (batch.length) await client.unlink(batch);
  await client.quit();
});
