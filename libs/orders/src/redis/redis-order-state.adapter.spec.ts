import { loadConfig } from '@cdp/config';
import { toUnits } from '@cdp/domain';
import { ACCOUNT_SHARDS, connectRedis, type RedisConnection } from '@cdp/redis';
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

async function* from<T>(items: T[]): AsyncIterable<T> {
  for (const item of items) yield await Promise.resolve(item);
}

/** The order ids in an account's shard indexes. */
async function indexed(account: string): Promise<string[]> {
  const shards = await Promise.all(
    Array.from({ length: ACCOUNT_SHARDS }, (_, shard) =>
      redis.commands.zRange(orderKeys.index(account, shard), 0, -1),
    ),
  );
  return shards.flat().sort();
}

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
    expect(await indexed(acc)).toEqual(['o1', 'o2']);
    // A rebuild from a store that holds only o2: o1's keys go, found from the index.
    await shortLived.beginRebuild(acc);
    await shortLived.load(acc, from([{ ...purchase, id: 'p2', orderId: 'o2' }]));
    expect(await redis.commands.exists(orderKeys.order(acc, 'o1'))).toBe(0);
    expect(await redis.commands.exists(orderKeys.applied(acc, 'o1'))).toBe(0);
    expect((await shortLived.get(acc, 'o2'))!.purchaseEventId).toBe('p2');
    expect(await indexed(acc)).toEqual(['o2']);
  });

  it('reads an order of the layout before the sharding, refuses its first batch, and the rebuild removes that layout', async () => {
    const acc = `${account}e`;
    const state = new RedisOrderState(redis, RETENTION_MS);
    const purchase = {
      id: 'p',
      orderId: 'old',
      kind: 'event',
      action: 'purchase',
      ts: 1_000,
      subtotal: toUnits(15),
      fields: { coupon_code: 'K' },
    } as const;
    // An account as the release before left it: its ready marker, its index and an order, all on the
    // account's tag. The hash format did not change, so the order's keys are copied from one written now.
    const source = `${acc}src`;
    await state.beginRebuild(source);
    await state.load(source, from([purchase]));
    const legacy = orderKeys.legacy;
    await redis.commands.set(legacy.ready(acc), new Date().toISOString());
    await redis.commands.hSet(
      legacy.order(acc, 'old'),
      await redis.commands.hGetAll(orderKeys.order(source, 'old')),
    );
    await redis.commands.hSet(legacy.applied(acc, 'old'), { p: '1' });
    await redis.commands
      .multi()
      .zAdd(legacy.index(acc), { score: Date.now() + RETENTION_MS, value: 'old' })
      .exec();

    // Before any batch, the API still finds the order (an entity update needs it to exist).
    const before = await state.get(acc, 'old');
    expect(before).toMatchObject({ version: 1, purchaseEventId: 'p', subtotal: toUnits(15) });
    expect(before!.fields.coupon_code!.value).toBe('K');
    expect(await state.get(acc, 'missing')).toBeUndefined();

    // No shard of the account is ready: its first batch is refused, and nothing is written.
    const refund = {
      ...purchase,
      id: 'r',
      action: 'refund',
      ts: 2_000,
      subtotal: toUnits(5),
      fields: {},
    } as const;
    await expect(state.apply(acc, [refund])).rejects.toBeInstanceOf(OrdersNotWarmError);
    expect(await redis.commands.exists(orderKeys.order(acc, 'old'))).toBe(0);

    // The rebuild the processor then runs (OrdersRebuild): from the store's change log, here the purchase.
    expect(await state.beginRebuild(acc)).toBe(true);
    expect(await state.load(acc, from([purchase]))).toBe(1);
    await state.endRebuild(acc);
    for (const key of [
      legacy.ready(acc),
      legacy.index(acc),
      legacy.order(acc, 'old'),
      legacy.applied(acc, 'old'),
    ])
      expect([key, await redis.commands.exists(key)]).toEqual([key, 0]);
    expect(await state.get(acc, 'old')).toEqual(before);

    // The batch again: the refund applies once; the purchase redelivered moves nothing.
    const { outcomes } = await state.apply(acc, [refund, purchase]);
    expect(outcomes.map((o) => [o.applied, o.seq])).toEqual([
      [true, 2],
      [false, 1],
    ]);
    expect(await state.get(acc, 'old')).toMatchObject({ version: 2, subtotal: toUnits(10), adjustments: 1 });
    // A process that has not looked since finds no legacy orders either.
    expect(await new RedisOrderState(redis, RETENTION_MS).get(acc, 'missing')).toBeUndefined();
  });

  it("applies a batch over many shards in each order's own sequence, one outcome per change in place", async () => {
    const acc = `${account}f`;
    const state = new RedisOrderState(redis, RETENTION_MS);
    await state.beginRebuild(acc);
    await state.load(acc, none());
    // 40 orders (on many shards), each a purchase then two returns, interleaved across orders.
    const orderIds = Array.from({ length: 40 }, (_, i) => `m${i}`);
    const batch = [0, 1, 2].flatMap((step) =>
      orderIds.map((orderId) => ({
        id: `${orderId}-${step}`,
        orderId,
        kind: 'event' as const,
        action: step === 0 ? ('purchase' as const) : ('return' as const),
        ts: step,
        subtotal: toUnits(step === 0 ? 100 : 1),
        fields: { ship_address: `${orderId}-${step}` },
      })),
    );
    const { outcomes, orders } = await state.apply(acc, batch);
    expect(outcomes.map((o) => o.seq)).toEqual(batch.map((c) => Number(c.id.split('-')[1]) + 1));
    expect(orders.map((o) => o.orderId).sort()).toEqual([...orderIds].sort());
    for (const order of orders)
      expect(order).toMatchObject({ version: 3, subtotal: toUnits(98), adjustments: 2 });
    expect(new Set(orderIds.map((id) => orderKeys.order(acc, id).split('}')[0])).size).toBeGreaterThan(20);
  });
});
