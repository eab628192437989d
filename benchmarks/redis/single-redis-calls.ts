import type { Identifier, OrderChange } from '@cdp/domain';
import { RedisProfileState } from '@cdp/identity/redis';
import { RedisOrderState } from '@cdp/orders/redis';
import { accountShard, accountShardPrefix, groupBy, type RedisConnection } from '@cdp/redis';
import { freePort } from '../lib/free-port.js';
import { startRedis } from '../lib/private-redis.js';
import { args, median, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * What sharding an account's orders and opt-out pool over 256 tags costs on a single Redis, where one call
 * could take a whole batch (issue 35): `--batches` batches of 1,000 order changes (500 orders new to
 * the batch, a purchase and a return each, on nearly every shard) and of 1,000 opt-out checks and 1,000
 * additions (identifiers on nearly every shard), through the drivers, each path on a private
 * redis-server (no persistence) of this run. Per change: client CPU (process.cpuUsage), Redis CPU (INFO
 * cpu, used_cpu_user + used_cpu_sys) and wall time; medians of `--rounds`, the paths alternated round by
 * round so both see the same load.
 *
 * - `one call` — this release: a batch is one FCALL (orders) or one EVAL (pool) over every shard it touches.
 * - `per shard` — the release before: one call per shard the batch touches, all at once. Orders: the batch
 *   split by shard and each part given to the driver, which makes one call of it, the shape of the
 *   release before's call (one shard's ready marker and index, then its orders' keys). Pool: SMISMEMBER
 *   and SADD per shard set, verbatim the code before.
 *
 *   npm run build && node dist/benchmarks/redis/single-redis-calls.js [--batches 50] [--rounds 5]
 */
const opt = args({ batches: 50, rounds: 5, batch: 1000 });
const BATCHES = Number(opt.batches);
const BATCH = Number(opt.batch);
const RETENTION_MS = 400 * 86_400_000;

async function* none<T>(): AsyncIterable<T> {}

type Path = 'one call' | 'per shard';
const PATHS: Path[] = ['one call', 'per shard'];

interface Cost {
  clientUs: number;
  redisUs: number;
  wallUs: number;
  calls: number;
}

/** Redis's own CPU so far, µs. */
async function redisCpuUs(redis: RedisConnection): Promise<number> {
  const [info] = await redis.onEveryPrimary(['INFO', 'cpu']);
  const of = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(String(info))![1]);
  return (of('used_cpu_user') + of('used_cpu_sys')) * 1e6;
}

/** How many times the server ran `command` (INFO commandstats). */
async function calls(redis: RedisConnection, command: string): Promise<number> {
  const [stats] = await redis.onEveryPrimary(['INFO', 'commandstats']);
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(String(stats))?.[1] ?? 0);
}

/**
 * Runs `work` once per batch; its cost per item (`items` a batch), and the client's calls a batch
 * (`command`: what the path sends; commands a script runs count under their own names).
 */
async function measure(
  redis: RedisConnection,
  items: number,
  command: string,
  work: (b: number) => Promise<unknown>,
): Promise<Cost> {
  const calls0 = await calls(redis, command);
  const redis0 = await redisCpuUs(redis);
  const client0 = process.cpuUsage();
  const t0 = performance.now();
  for (let b = 0; b < BATCHES; b++) await work(b);
  const wall = (performance.now() - t0) * 1000;
  const client = process.cpuUsage(client0);
  const redis1 = await redisCpuUs(redis);
  const n = BATCHES * items;
  return {
    clientUs: (client.user + client.system) / n,
    redisUs: (redis1 - redis0) / n,
    wallUs: wall / n,
    calls: ((await calls(redis, command)) - calls0) / BATCHES,
  };
}

/** Batch b of order changes: 500 orders new to it, a purchase then a return each (1,000 changes). */
function orderBatch(b: number): OrderChange[] {
  const orders = Array.from({ length: BATCH / 2 }, (_, i) => `b${b}-o${i}`);
  return [
    ...orders.map((orderId, i) => ({
      id: `p${b}-${i}`,
      orderId,
      kind: 'event' as const,
      action: 'purchase' as const,
      ts: b * BATCH + i,
      subtotal: 10_000,
      fields: { coupon_code: 'K' },
    })),
    ...orders.map((orderId, i) => ({
      id: `r${b}-${i}`,
      orderId,
      kind: 'event' as const,
      action: 'return' as const,
      ts: b * BATCH + i + 1,
      subtotal: 1_000,
      fields: {},
    })),
  ];
}

const email = (b: number, i: number): Identifier => ({ kind: 'email', value: `b${b}-c${i}@example.com` });
const member = (id: Identifier) => `${id.kind}:${id.value}`;

async function ordersRun(redis: RedisConnection, path: Path, round: number): Promise<Cost> {
  const account = `orders-${path.replace(' ', '-')}-${round}`;
  const state = new RedisOrderState(redis, RETENTION_MS);
  await state.beginRebuild(account);
  await state.load(account, none());
  await state.endRebuild(account);
  const batches = Array.from({ length: BATCHES }, (_, b) => orderBatch(b));
  return measure(redis, BATCH, 'fcall', async (b) => {
    const batch = batches[b]!;
    if (path === 'one call') return state.apply(account, batch);
    const parts = groupBy(batch, (c) => accountShard(c.orderId));
    return Promise.all([...parts.values()].map((part) => state.apply(account, part)));
  });
}

/** Opt-out additions (`add`) then checks of the same account: batch b asks its own 1,000 added and 1,000 not. */
async function poolRun(redis: RedisConnection, path: Path, round: number): Promise<{ add: Cost; ask: Cost }> {
  const account = `pool-${path.replace(' ', '-')}-${round}`;
  const profiles = new RedisProfileState(redis, { requireLoaded: false });
  // The first use of an account looks for the pool before the sharding once: not part of a batch.
  await profiles.inOptOutPool(account, [email(-1, 0)]);
  // The pool's shard sets, as libs/identity/src/redis/redis-keys.ts names them.
  const sets = (ids: Identifier[]) =>
    groupBy(ids.map(member), (m) => `${accountShardPrefix(account, accountShard(m))}optout`);
  const added = Array.from({ length: BATCHES }, (_, b) =>
    Array.from({ length: BATCH }, (_, i) => email(b, i)),
  );
  const asked = added.map((ids, b) => [
    ...ids.slice(0, BATCH / 2),
    ...Array.from({ length: BATCH / 2 }, (_, i) => email(b, BATCH + i)),
  ]);
  const add = await measure(redis, BATCH, path === 'one call' ? 'eval' : 'sadd', async (b) => {
    if (path === 'one call') return profiles.addToOptOutPool(account, added[b]!);
    return Promise.all([...sets(added[b]!)].map(([key, members]) => redis.commands.sAdd(key, members)));
  });
  const ask = await measure(redis, BATCH, path === 'one call' ? 'eval' : 'smismember', async (b) => {
    if (path === 'one call') return profiles.inOptOutPool(account, asked[b]!);
    const found = new Set<string>();
    await Promise.all(
      [...sets(asked[b]!)].map(async ([key, members]) => {
        const answers = await redis.commands.smIsMember(key, members);
        members.forEach((m, i) => answers[i] && found.add(m));
      }),
    );
    return asked[b]!.filter((id) => found.has(member(id)));
  });
  return { add, ask };
}

async function main() {
  const port = await freePort();
  const { client: redis, stop } = await startRedis(port);
  const runs = new Map<string, Cost[]>();
  const record = (what: string, path: Path, cost: Cost) => {
    const key = `${what}|${path}`;
    runs.set(key, [...(runs.get(key) ?? []), cost]);
  };
  try {
    // A round of each path first, not counted: libraries loaded, scripts cached, the JIT warm.
    for (const path of PATHS) {
      await ordersRun(redis, path, -1);
      await poolRun(redis, path, -1);
    }
    for (let round = 0; round < Number(opt.rounds); round++) {
      // Alternated, and the first path swapped each round, so neither always runs on a fuller server.
      for (const path of round % 2 === 0 ? PATHS : [...PATHS].reverse()) {
        record('order changes', path, await ordersRun(redis, path, round));
        const { add, ask } = await poolRun(redis, path, round);
        record('opt-out additions', path, add);
        record('opt-out checks', path, ask);
      }
    }
  } finally {
    await stop();
  }
  const rows: Row[] = [...runs].map(([key, costs]) => {
    const [what, path] = key.split('|');
    return {
      what: what!,
      path: path!,
      'calls a batch': median(costs.map((c) => c.calls)),
      'client CPU µs/item': median(costs.map((c) => c.clientUs)),
      'Redis CPU µs/item': median(costs.map((c) => c.redisUs)),
      'wall µs/item': median(costs.map((c) => c.wallUs)),
    };
  });
  printTable(`single Redis, ${BATCHES} batches of ${BATCH} a round, medians of ${opt.rounds} rounds`, rows);
  console.info(
    `results: ${writeResults('single-redis-calls', { opt, rows, runs: Object.fromEntries(runs) })}`,
  );
}

void main();
