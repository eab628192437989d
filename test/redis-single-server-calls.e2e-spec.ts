import type { Identifier } from '@cdp/domain';
import { RedisProfileState } from '@cdp/identity/redis';
import { RedisOrderState, orderKeys } from '@cdp/orders/redis';
import { OrdersNotWarmError } from '@cdp/orders';
import { accountShard, connectRedis, type RedisConnection } from '@cdp/redis';
import { EngineProcess } from './support/engines.js';

/**
 * On a single Redis (the common deployment) an account's sharded state is still written and read in one
 * call a batch: its 256 shard tags are only there to spread it over a cluster. Counted on a redis-server
 * of this file's own (INFO commandstats), so no other test's calls mix in.
 */
let engine: EngineProcess;
let redis: RedisConnection;
beforeAll(async () => {
  engine = await EngineProcess.start('redis');
  redis = await connectRedis(engine.url);
}, 30_000);
afterAll(async () => {
  await redis?.close();
  await engine?.remove();
});

async function* none<T>(): AsyncIterable<T> {}

/** How many times the server ran `command` (INFO commandstats), calls from scripts included. */
async function calls(command: string): Promise<number> {
  const [stats] = await redis.onEveryPrimary(['INFO', 'commandstats']);
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(String(stats))?.[1] ?? 0);
}

/** What `work` cost in calls of each command. */
async function counted(commands: string[], work: () => Promise<unknown>): Promise<Record<string, number>> {
  const before = await Promise.all(commands.map(calls));
  await work();
  const after = await Promise.all(commands.map(calls));
  return Object.fromEntries(commands.map((c, i) => [c, after[i]! - before[i]!]));
}

const purchase = (i: number, orderId = `order-${i}`) => ({
  id: `p${i}`,
  orderId,
  kind: 'event' as const,
  action: 'purchase' as const,
  ts: i,
  subtotal: 10_000,
  fields: {},
});

// One wiring: the Redis drivers under test are the scaled-out wiring's; the embedded one has no Redis.
describe('orders on a single Redis', () => {
  it('applies a batch of 1,000 changes over orders of every shard in one function call', async () => {
    expect(redis.isCluster).toBe(false);
    const account = `one${Math.random().toString(36).slice(2, 8)}`;
    const state = new RedisOrderState(redis, 400 * 86_400_000);
    await state.beginRebuild(account);
    await state.load(account, none());
    // 500 orders, a purchase and a return each: every one of the 256 shards is touched.
    const orderIds = Array.from({ length: 500 }, (_, i) => `order-${i}`);
    expect(new Set(orderIds.map(accountShard)).size).toBe(256);
    const batch = [
      ...orderIds.map((orderId, i) => purchase(i, orderId)),
      ...orderIds.map((orderId, i) => ({ ...purchase(i, orderId), id: `r${i}`, action: 'return' as const })),
    ];
    let outcomes: { applied: boolean; seq: number }[] = [];
    expect(await counted(['fcall'], async () => ({ outcomes } = await state.apply(account, batch)))).toEqual({
      fcall: 1,
    });
    expect(outcomes.map((o) => [o.applied, o.seq])).toEqual(batch.map((_, i) => [true, i < 500 ? 1 : 2]));
    for (let i = 0; i < 500; i += 37)
      expect(await state.get(account, `order-${i}`)).toMatchObject({ version: 2, adjustments: 1 });
  });

  it('refuses the whole batch, writing nothing, when one shard it touches is not loaded', async () => {
    const account = `cold${Math.random().toString(36).slice(2, 8)}`;
    const state = new RedisOrderState(redis, 400 * 86_400_000);
    await state.beginRebuild(account);
    await state.load(account, none());
    const batch = Array.from({ length: 300 }, (_, i) => purchase(i));
    // One touched shard's marker gone (as a rebuild in progress leaves it): the other shards' orders wait too.
    await redis.commands.del(orderKeys.ready(account, accountShard('order-7')));
    await expect(state.apply(account, batch)).rejects.toBeInstanceOf(OrdersNotWarmError);
    for (let i = 0; i < 300; i += 13) expect(await state.get(account, `order-${i}`)).toBeUndefined();
    // Rebuilt, the same batch applies whole.
    await state.beginRebuild(account);
    await state.load(account, none());
    const { outcomes } = await state.apply(account, batch);
    expect(outcomes.every((o) => o.applied && o.seq === 1)).toBe(true);
  });
});

describe('the opt-out pool on a single Redis', () => {
  it('adds and asks the shard sets of 1,000 identifiers in one script call each', async () => {
    const account = `pool${Math.random().toString(36).slice(2, 8)}`;
    const profiles = new RedisProfileState(redis, { requireLoaded: false });
    const email = (i: number): Identifier => ({ kind: 'email', value: `c${i}@example.com` });
    const opted = Array.from({ length: 1000 }, (_, i) => email(2 * i));
    const shardsOf = (ids: Identifier[]) => new Set(ids.map((id) => accountShard(`email:${id.value}`))).size;
    expect(shardsOf(opted)).toBeGreaterThan(200);
    // The first use of the account looks for the pool of the layout before the sharding (EXISTS).
    await profiles.inOptOutPool(account, [email(-1)]);
    expect(
      await counted(['eval', 'sadd', 'smismember'], () => profiles.addToOptOutPool(account, opted)),
    ).toEqual({ eval: 1, sadd: shardsOf(opted), smismember: 0 });
    const asked = Array.from({ length: 1000 }, (_, i) => email(i));
    let found: Identifier[] = [];
    expect(
      await counted(
        ['eval', 'sadd', 'smismember'],
        async () => (found = await profiles.inOptOutPool(account, asked)),
      ),
    ).toEqual({ eval: 1, sadd: 0, smismember: shardsOf(asked) });
    expect(found).toEqual(asked.filter((_, i) => i % 2 === 0));
  });

  it('takes more members of one shard set than one command is given at once (a thousand)', async () => {
    const account = `big${Math.random().toString(36).slice(2, 8)}`;
    const profiles = new RedisProfileState(redis, { requireLoaded: false });
    const sameShard: Identifier[] = [];
    for (let i = 0; sameShard.length < 2500; i++)
      if (accountShard(`vuid:v${i}`) === 0) sameShard.push({ kind: 'vuid', value: `v${i}` });
    await profiles.addToOptOutPool(account, sameShard.slice(0, 2000));
    const found = await profiles.inOptOutPool(account, sameShard);
    expect(found).toEqual(sameShard.slice(0, 2000));
  });
});
