import { loadConfig } from '@cdp/config';
import { toUnits } from '@cdp/domain';
import { connectRedis, type RedisClient } from '@cdp/identity';
import { OrdersNotWarmError } from '../order-state.port.js';
import { ORDER_CONTRACT_ACCOUNTS, orderStateContract } from '../order-state.contract.js';
import { orderKeys, RedisOrderState } from './redis-order-state.adapter.js';

/** Runs against the Redis of the machine (REDIS_URL or 127.0.0.1:6379); it must be up under CI. */
let redis: RedisClient;
beforeAll(async () => {
  redis = await connectRedis(loadConfig().redisUrl);
});
afterAll(async () => {
  await redis.quit();
});

async function* none<T>(): AsyncIterable<T> {}

orderStateContract('redis', async () => {
  const state = new RedisOrderState(redis);
  for (const account of ORDER_CONTRACT_ACCOUNTS) {
    await state.beginRebuild(account);
    await state.load(account, none());
  }
  return state;
});

describe('RedisOrderState specifics', () => {
  const account = `orx${Math.random().toString(36).slice(2, 8)}`;
  it('refuses an account it does not hold, rather than forget purchases and applied ids', async () => {
    const state = new RedisOrderState(redis);
    const change = { id: 'e', orderId: 'o', kind: 'event', action: 'purchase', ts: 1, fields: {} } as const;
    await expect(state.apply(account, [{ ...change, fields: {} }])).rejects.toBeInstanceOf(
      OrdersNotWarmError,
    );
    expect(await state.beginRebuild(account)).toBe(true);
    expect(await state.beginRebuild(account)).toBe(false); // one rebuild at a time, across processes
    await state.load(account, none());
    const { outcomes } = await state.apply(account, [{ ...change, fields: {}, subtotal: toUnits(1.5) }]);
    expect(outcomes[0]!.applied).toBe(true);
    expect(await redis.exists(orderKeys.order(account, 'o'))).toBe(1);
  });

  it('keeps large tallies exact (amounts as integer units)', async () => {
    const state = new RedisOrderState(redis);
    await state.beginRebuild(`${account}b`);
    await state.load(`${account}b`, none());
    const changes = Array.from({ length: 10 }, (_, i) => ({
      id: `r${i}`,
      orderId: 'big',
      kind: 'event' as const,
      action: i === 0 ? ('purchase' as const) : ('refund' as const),
      ts: i,
      subtotal: toUnits(i === 0 ? 123456789.1234 : 0.1),
      fields: {},
    }));
    await state.apply(`${account}b`, changes);
    expect((await state.get(`${account}b`, 'big'))!.subtotal).toBe(
      toUnits(123456789.1234) - 9 * toUnits(0.1),
    );
  });
});
