import { loadConfig } from '@cdp/config';
import { toUnits } from '@cdp/domain';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { OrdersNotWarmError } from '../order-state.port.js';
import { ORDER_CONTRACT_ACCOUNTS, orderStateContract } from '../order-state.contract.js';
import { orderKeys, RedisOrderState } from './redis-order-state.adapter.js';

/** Runs against the Redis of the machine (REDIS_URL or 127.0.0.1:6379); it must be up under CI. */
let redis: RedisConnection;
beforeAll(async () => {
  redis = await connectRedis(loadConfig().redisUrl);
});
afterAll(async () => {
  await redis.close();
});

const RETENTION_MS = 400 * 86_400_000;

async function* none<T>(): AsyncIterable<T> {}

orderStateContract('redis', async () => {
  const state = new RedisOrderState(redis, RETENTION_MS);
  for (const account of ORDER_CONTRACT_ACCOUNTS) {
    await state.beginRebuild(account);
    await state.load(account, none());
  }
  return state;
});

describe('RedisOrderState specifics', () => {
  const account = `orx${Math.random().toString(36).slice(2, 8)}`;
  it('refuses an account it does not hold, rather than forget purchases and applied ids', async () => {
    const state = new RedisOrderState(redis, RETENTION_MS);
    const change = { id: 'e', orderId: 'o', kind: 'event', action: 'purchase', ts: 1, fields: {} } as const;
    await expect(state.apply(account, [{ ...change, fields: {} }])).rejects.toBeInstanceOf(
      OrdersNotWarmError,
    );
    expect(await state.beginRebuild(account)).toBe(true);
    expect(await state.beginRebuild(account)).toBe(false); // one rebuild at a time, across processes
    await state.load(account, none());
    const { outcomes } = await state.apply(account, [{ ...change, fields: {}, subtotal: toUnits(1.5) }]);
    expect(outcomes[0]!.applied).toBe(true);
    expect(await redis.commands.exists(orderKeys.order(account, 'o'))).toBe(1);
  });

  it('keeps large tallies exact (amounts as integer units)', async () => {
    const state = new RedisOrderState(redis, RETENTION_MS);
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

  it('two processor replicas applying the same order concurrently, with redeliveries, count each change once', async () => {
    const second = await connectRedis(loadConfig().redisUrl);
    try {
      const replicas = [new RedisOrderState(redis, RETENTION_MS), new RedisOrderState(second, RETENTION_MS)];
      const acc = `${account}c`;
      await replicas[0]!.beginRebuild(acc);
      await replicas[0]!.load(acc, none());
      const change = (i: number) => ({
        id: `c${i}`,
        orderId: 'shared',
        kind: 'event' as const,
        action: i === 0 ? ('purchase' as const) : ('return' as const),
        ts: i,
        subtotal: toUnits(i === 0 ? 1000 : 1),
        fields: { ship_address: `a${i}` },
      });
      // 100 changes in batches of 10; every batch is sent to both replicas at once (a redelivery race).
      const batches = Array.from({ length: 10 }, (_, b) =>
        Array.from({ length: 10 }, (_, i) => change(b * 10 + i)),
      );
      await Promise.all(batches.flatMap((batch) => replicas.map((r) => r.apply(acc, batch))));
      const state = (await replicas[1]!.get(acc, 'shared'))!;
      expect(state).toMatchObject({ version: 100, subtotal: toUnits(1000 - 99), adjustments: 99 });
      expect(state.fields.ship_address!.value).toBe('a99');
    } finally {
      await second.close();
    }
  });

  it('expires an order its retention after its last change, and a rebuild deletes the orders it indexed', async () => {
    const acc = `${account}d`;
    const shortLived = new RedisOrderState(redis, 60_000);
    await shortLived.beginRebuild(acc);
    await shortLived.load(acc, none());
    const purchase = {
      id: 'p',
      orderId: 'o1',
      kind: 'event',
      action: 'purchase',
      ts: 1,
      fields: {},
    } as const;
    await shortLived.apply(acc, [purchase, { ...purchase, id: 'p2', orderId: 'o2' }]);
    for (const key of [orderKeys.order(acc, 'o1'), orderKeys.applied(acc, 'o1')]) {
      const ttl = await redis.commands.pTTL(key);
      expect(ttl).toBeGreaterThan(50_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
    expect((await redis.commands.zRange(orderKeys.index(acc), 0, -1)).sort()).toEqual(['o1', 'o2']);
    // A rebuild from a store that holds only o2: o1's keys go, found from the index.
    await shortLived.beginRebuild(acc);
    await shortLived.load(
      acc,
      (async function* () {
        yield await Promise.resolve({ ...purchase, id: 'p2', orderId: 'o2' });
      })(),
    );
    expect(await redis.commands.exists(orderKeys.order(acc, 'o1'))).toBe(0);
    expect(await redis.commands.exists(orderKeys.applied(acc, 'o1'))).toBe(0);
    expect((await shortLived.get(acc, 'o2'))!.purchaseEventId).toBe('p2');
    expect(await redis.commands.zRange(orderKeys.index(acc), 0, -1)).toEqual(['o2']);
  });
});
