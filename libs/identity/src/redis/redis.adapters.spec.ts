import { identityIndexContract, profileStateContract } from '../identity.contract.js';
import { IdentityNotWarmError } from '../identity-index.port.js';
import { connectRedis, type RedisClient } from './redis-connection.js';
import { RedisIdentityIndex } from './redis-identity-index.adapter.js';
import { RedisProfileState } from './redis-profile-state.adapter.js';
import { loadConfig } from '@cdp/config';

/** Runs against the Redis of the machine (REDIS_URL or 127.0.0.1:6379); it must be up under CI. */
const url = loadConfig().redisUrl;
let redis: RedisClient;

beforeAll(async () => {
  redis = await connectRedis(url);
});
afterAll(async () => {
  await redis.quit();
});

async function* none<T>(): AsyncIterable<T> {}

identityIndexContract('redis', async (accounts) => {
  const index = new RedisIdentityIndex(redis);
  for (const account of accounts) {
    await index.beginRebuild(account);
    await index.load(account, none());
  }
  return index;
});
profileStateContract('redis', () => Promise.resolve(new RedisProfileState(redis)));

describe('RedisIdentityIndex specifics', () => {
  const account = `rb${Math.random().toString(36).slice(2, 8)}`;
  const id = (value: string) => ({ kind: 'email', value });

  it('refuses to resolve an account it does not hold, rather than split its customers', async () => {
    const index = new RedisIdentityIndex(redis);
    await expect(index.resolve(`cold${account}`, [[id('a@x.com')]], ['c'])).rejects.toBeInstanceOf(
      IdentityNotWarmError,
    );
  });

  it('after a flush, a rebuild from the links gives the same resolutions as before', async () => {
    const index = new RedisIdentityIndex(redis);
    await index.beginRebuild(account);
    await index.load(account, none());
    const records = Array.from({ length: 500 }, (_, i) => [
      id(`p${i % 200}@x.com`),
      { kind: 'vuid', value: `v${i}` },
    ]);
    const before = await index.resolve(
      account,
      records,
      records.map((_, i) => `c${i}`),
    );
    const links = before.flatMap((r) => r.linked.map((l) => ({ ...l, svc_id: r.customerId })));

    await redis.flushAll();
    await expect(index.resolve(account, [[id('p1@x.com')]], ['new'])).rejects.toBeInstanceOf(
      IdentityNotWarmError,
    );
    expect(await index.beginRebuild(account)).toBe(true);
    expect(await index.beginRebuild(account)).toBe(false); // one rebuild at a time, across processes
    async function* stored() {
      for (const l of links) yield await Promise.resolve(l);
    }
    expect(await index.load(account, stored())).toBe(700);
    const after = await index.resolve(
      account,
      records,
      records.map(() => 'never'),
    );
    expect(after.map((r) => r.customerId)).toEqual(before.map((r) => r.customerId));
    expect(after.every((r) => !r.created && r.linked.length === 0)).toBe(true);
  });
});
