import { loadConfig } from '@cdp/config';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { consentStateContract } from '../consent-state.contract.js';
import { consentKeys, RedisConsentState } from './redis-consent-state.adapter.js';

/** Runs against the Redis of the machine (REDIS_URL or 127.0.0.1:6379); it must be up under CI. */
let redis: RedisConnection;
beforeAll(async () => {
  redis = await connectRedis(loadConfig().redisUrl);
});
afterAll(async () => {
  await redis.close();
});

consentStateContract('redis', () => Promise.resolve(new RedisConsentState(redis)));

describe('list memberships written before the account was sharded', () => {
  it('are moved to the shards at first use: read back, listed, changed in order, their old keys gone', async () => {
    const account = `legacy${Math.random().toString(36).slice(2, 8)}`;
    // What the release before wrote: the account's own hash tag, one index.
    await redis.commands.hSet(consentKeys.legacyCustomer(account, 'c-1'), {
      __v: '2',
      news: '15000',
      promo: '0',
    });
    await redis.commands.hSet(consentKeys.legacyCustomer(account, 'c-2'), { __v: '1', news: '0' });
    await redis.commands.sAdd(consentKeys.legacyIndex(account), ['c-1', 'c-2']);

    const state = new RedisConsentState(redis);
    expect(await state.get(account, 'c-1')).toEqual({
      customerId: 'c-1',
      version: 2,
      lists: { news: true, promo: false },
      at: { news: 5000 },
    });
    const listed: string[] = [];
    for await (const s of state.customers(account)) listed.push(s.customerId);
    expect(listed.sort()).toEqual(['c-1', 'c-2']);
    // An older change loses to the moved one's time; a newer one counts on from the moved version.
    const [older, newer] = await state.apply(account, [
      { customerId: 'c-1', listId: 'news', subscribed: false, at: 4000 },
      { customerId: 'c-1', listId: 'promo', subscribed: true, at: 6000 },
    ]);
    expect(older).toMatchObject({ version: 2, stale: true });
    expect(newer).toMatchObject({ version: 3 });
    expect(
      await redis.commands.exists([
        consentKeys.legacyCustomer(account, 'c-1'),
        consentKeys.legacyCustomer(account, 'c-2'),
        consentKeys.legacyIndex(account),
      ]),
    ).toBe(0);
    // Another process finds nothing left to move and sees what the first wrote.
    expect((await new RedisConsentState(redis).get(account, 'c-1'))?.lists).toEqual({
      news: true,
      promo: true,
    });
  });
});
