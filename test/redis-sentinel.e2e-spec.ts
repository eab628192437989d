import { connectRedis, type RedisConnection } from '@cdp/redis';
import { RedisIdentityIndex, loadIdentityFunctions } from '@cdp/identity/redis';
import { graphRows, record } from '../libs/identity/src/identity.contract.js';
import { eventually } from './support/eventually.js';
import { RedisSentinelRig, SENTINEL_NAME } from './support/redis-sentinel.js';

/**
 * Redis behind Sentinel (`REDIS_SENTINEL_NAME`, `REDIS_URL` listing the sentinels): a primary, its
 * replica and a sentinel on loopback. The driver writes batches as the processor does (resolve, then
 * settle, which WAITs until the replica holds them); the primary is SIGKILLed mid-stream; every batch
 * acknowledged before, during and after the failover reads back from the promoted replica, the driver
 * follows the failover on its own, and health is not ready while there is no primary.
 */
// One wiring: Redis Sentinel is a scaled-out deployment; the embedded wiring has no Redis.
let rig: RedisSentinelRig;
let redis: RedisConnection;
beforeAll(async () => {
  rig = await RedisSentinelRig.start();
  redis = await connectRedis(rig.sentinels, true, SENTINEL_NAME);
  await loadIdentityFunctions(redis);
}, 60_000);
afterAll(async () => {
  await redis?.close();
  await rig?.stop();
});

/** A call that gives up after `ms` (a command sent to a dying primary may otherwise wait for its reconnection). */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms))),
  ]).finally(() => clearTimeout(timer));
}

it('follows a failover: nothing acknowledged is lost, health goes not ready and back', async () => {
  expect(await redis.health()).toEqual({ driver: 'redis-sentinel', ready: true });
  const account = 'sentinel';
  const index = new RedisIdentityIndex(redis);
  expect(await index.beginRebuild(account)).toBe(true);
  await index.load(account, graphRows([]));
  await index.endRebuild(account);

  /** email -> the customer its acknowledged batch resolved it to. */
  const acknowledged = new Map<string, string>();
  let batch = 0;
  /** When each batch written after the kill was acknowledged. */
  const acks: number[] = [];
  /** One batch as the processor writes it; retried (same message) until acknowledged. */
  const writeBatch = async () => {
    const n = batch++;
    const records = Array.from({ length: 20 }, (_, i) =>
      record([{ kind: 'email', value: `b${n}-${i}@x.com` }], `s${n}-${i}`, `msg${n}`, i),
    );
    for (;;) {
      try {
        const resolved = await within(index.resolve(account, records), 5000);
        await within(index.settle(account, [`msg${n}`]), 5000);
        records.forEach((r, i) => acknowledged.set(r.ids[0]!.value, resolved[i]!.customerId));
        if (n >= 10) acks.push(Date.now());
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100)); // failing over: the batch is redelivered
      }
    }
  };

  for (let i = 0; i < 10; i++) await writeBatch();
  const before = rig.primaryPort;
  expect(await rig.primaryNow()).toBe(before);

  let sawNotReady = false;
  let watching = true;
  const watch = (async () => {
    while (watching) {
      if (!(await redis.health()).ready) sawNotReady = true;
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const killedAt = Date.now();
  const killed = rig.kill(before);
  // Batches keep coming while the primary dies and the sentinel promotes the replica.
  while (batch < 40) await writeBatch();
  await killed;
  await eventually(async () => (await rig.primaryNow()) === rig.replicaPort, 30_000);
  await eventually(async () => (await redis.health()).ready, 30_000);
  watching = false;
  await watch;
  expect(sawNotReady).toBe(true);
  // The longest gap between two acknowledged batches is the failover as the processor lives it.
  const gaps = acks.map((t, i) => t - (i ? acks[i - 1]! : killedAt));
  console.log(`sentinel failover: batches paused ${Math.max(...gaps)} ms (down-after 1000 ms)`);

  // Every acknowledged record reads back, from the promoted replica.
  for (const [email, customer] of acknowledged)
    expect(await index.lookup(account, { kind: 'email', value: email })).toBe(customer);
  expect(acknowledged.size).toBe(40 * 20);
  const [info] = await redis.onEveryPrimary(['INFO', 'server']);
  expect(String(info)).toContain(`tcp_port:${rig.replicaPort}`);
}, 90_000);
