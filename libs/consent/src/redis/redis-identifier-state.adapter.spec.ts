import { loadConfig } from '@cdp/config';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { identifierStateContract } from '../identifier-state.contract.js';
import { identifierStateKeys, RedisIdentifierState } from './redis-identifier-state.adapter.js';

/** Runs against the Redis of the machine (REDIS_URL or 127.0.0.1:6379); it must be up under CI. */
let redis: RedisConnection;
beforeAll(async () => {
  redis = await connectRedis(loadConfig().redisUrl);
});
afterAll(async () => {
  await redis.close();
});

identifierStateContract('redis', () => Promise.resolve(new RedisIdentifierState(redis)));

describe('identifier state written before the account was sharded', () => {
  it('is moved to the shards at first use: read back, counted on, its old keys gone', async () => {
    const account = `legacy${Math.random().toString(36).slice(2, 8)}`;
    const old = identifierStateKeys.legacyIdentifier(account, 'email:a@x.com');
    // What the release before wrote: the account's own hash tag, one index.
    await redis.commands.hSet(old, {
      __v: '2',
      consent: JSON.stringify({ consent: true, reason: 'form', ts: 1000 }),
      't:consent': '5000',
    });
    await redis.commands.hSet(identifierStateKeys.legacyIdentifier(account, 'phone:+47 1'), {
      __v: '1',
      metadata_ts: '7',
      'm:tier': '"gold"',
    });
    await redis.commands.sAdd(identifierStateKeys.legacyIndex(account), ['email:a@x.com', 'phone:+47 1']);

    const state = new RedisIdentifierState(redis);
    expect(await state.get(account, 'email', 'a@x.com')).toEqual({
      version: 2,
      consent: { consent: true, reason: 'form', ts: 1000 },
      times: { consent: 5000 },
    });
    expect(await state.get(account, 'phone', '+47 1')).toEqual({
      version: 1,
      metadata: { fields: { tier: 'gold' }, ts: 7 },
    });
    // An older change loses to the moved one's time; the counter goes on from the moved state.
    expect(
      await state.apply(account, [
        {
          field: 'email',
          value: 'a@x.com',
          ts: 900,
          type: 'consent',
          consent: false,
          reason: null,
          at: 4000,
        },
      ]),
    ).toEqual([3]);
    expect((await state.get(account, 'email', 'a@x.com'))?.consent).toEqual({
      consent: true,
      reason: 'form',
      ts: 1000,
    });
    expect(await redis.commands.exists([old, identifierStateKeys.legacyIndex(account)])).toBe(0);
    // Another process moving the same account later finds nothing left to move and changes nothing.
    expect((await new RedisIdentifierState(redis).get(account, 'email', 'a@x.com'))?.version).toBe(3);
  });
});
