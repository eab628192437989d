import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisIdempotencyStore } from '@cdp/idempotency/redis';
import { RedisRateLimiter } from '@cdp/rate-limits/redis';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { args, median, printTable, writeResults, type Row } from '../lib/stats.js';
import { figures, scanKeys, share, startCluster, stopNodes, type ClusterNode } from './loopback-cluster.js';

/**
 * How one account's sharded state spreads over a Redis Cluster (issue 30): a 3-primary loopback
 * cluster of its own (no replicas, no persistence), one account's `--records` idempotency records and
 * its rate-limit buckets written through the drivers, then each primary's share of the account's keys,
 * of the memory they took, and the Redis CPU each record cost on each primary. For contrast the same
 * records of a second account under the layout before the sharding (`cdp:{<account>}:idem:…`, the
 * account's one hash tag) — all on one primary.
 *
 *   npm run build && node dist/benchmarks/redis/account-spread.js --records 20000 [--primaries 1|3] [--rounds 3]
 */
const opts = args({ records: 20_000, primaries: 3, concurrency: 64, rounds: 3 });
/** The driver's compare-and-set before this release, verbatim: what a fresh take cost then. */
const FRESH_TAKE = `
local current = redis.call('GET', KEYS[1])
if (current or '') ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 1
`;
const FAMILIES = ['profiles', 'events', 'exports', 'subscriptions', 'lists', 'orders'];

async function inParallel(count: number, width: number, work: (i: number) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

interface Measured {
  keys: number[];
  memory: number[];
  cpuPerRecordUs: number[];
  seconds: number;
}

/** Writes one account's records and measures each primary: its keys of `pattern`, memory and CPU taken. */
async function phase(nodes: ClusterNode[], pattern: string, write: () => Promise<void>): Promise<Measured> {
  const before = nodes.map((n) => figures(n.port));
  const t0 = performance.now();
  await write();
  const seconds = (performance.now() - t0) / 1000;
  const after = nodes.map((n) => figures(n.port));
  return {
    keys: nodes.map((n) => scanKeys(n.port, pattern).length),
    memory: after.map((a, i) => a.memory - before[i]!.memory),
    cpuPerRecordUs: after.map((a, i) => (1e6 * (a.cpu - before[i]!.cpu)) / Number(opts.records)),
    seconds,
  };
}

/** One row per primary: shares of the last round, CPU per record the median over the rounds. */
function rowsOf(nodes: ClusterNode[], layout: string, runs: Measured[]): Row[] {
  const last = runs[runs.length - 1]!;
  return nodes.map((n, i) => ({
    layout,
    primary: n.port,
    keys: last.keys[i]!,
    'keys %': share(last.keys, i),
    'memory %': share(last.memory, i),
    'cpu µs/record (median)': median(runs.map((r) => r.cpuPerRecordUs[i]!)),
  }));
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-spread-'));
  let nodes: ClusterNode[] = [];
  let redis: RedisConnection | undefined;
  const stop = () => {
    stopNodes(nodes);
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => {
    stop();
    process.exit(130);
  });
  try {
    nodes = await startCluster(dir, Number(opts.primaries));
    redis = await connectRedis(nodes.map((n) => `redis://127.0.0.1:${n.port}`).join(','));
    const commands = redis.commands;
    const store = new RedisIdempotencyStore(redis);
    const limiter = new RedisRateLimiter(redis);
    const records = Number(opts.records);
    const width = Number(opts.concurrency);
    const until = Date.now() + 3_600_000;
    const record = (i: number) => JSON.stringify({ state: 'done', hash: `h${i}`, answer: { status: 202 } });

    const writeSharded = (account: string) =>
      phase(nodes, `cdp:{${account}#*`, async () => {
        await inParallel(records, width, async (i) => {
          if (!(await store.compareAndSet(account, `key-${i}`, undefined, record(i), until)))
            throw new Error(`record ${i} not taken`);
        });
        for (const family of FAMILIES) await limiter.take(account, family, { rate: 10, burst: 10 });
      });
    // The driver's compare-and-set before the sharding, so the CPU columns compare.
    const writeLegacy = (account: string) =>
      phase(nodes, `cdp:{${account}}:*`, () =>
        inParallel(records, width, (i) =>
          commands.eval(FRESH_TAKE, {
            keys: [RedisIdempotencyStore.legacyKey(account, `key-${i}`)],
            arguments: ['', record(i), '3600000'],
          }),
        ),
      );
    // Rounds alternate which layout goes first, so neither always pays the warm-up.
    const sharded: Measured[] = [];
    const legacy: Measured[] = [];
    for (let r = 0; r < Number(opts.rounds); r++) {
      if (r % 2 === 0) {
        sharded.push(await writeSharded(`big${r}`));
        legacy.push(await writeLegacy(`old${r}`));
      } else {
        legacy.push(await writeLegacy(`old${r}`));
        sharded.push(await writeSharded(`big${r}`));
      }
    }
    const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
    printTable(
      `One account's ${records.toLocaleString('en-US')} idempotency records (+ ${FAMILIES.length} rate-limit ` +
        `buckets) on ${nodes.length} primaries, ${sharded.length} rounds`,
      [...rowsOf(nodes, 'sharded (this release)', sharded), ...rowsOf(nodes, 'one tag (before)', legacy)],
    );
    const shares = nodes.map((_, i) => share(sharded[sharded.length - 1]!.keys, i));
    console.log(
      `\nRedis CPU per record, all primaries (median of rounds): sharded ` +
        `${median(sharded.map((m) => sum(m.cpuPerRecordUs))).toFixed(2)} µs, one tag ` +
        `${median(legacy.map((m) => sum(m.cpuPerRecordUs))).toFixed(2)} µs`,
    );
    if (nodes.length >= 3) {
      const ok = shares.every((x) => x >= 20 && x <= 50);
      console.log(
        `each primary's share of the sharded account: ${shares.map((x) => x.toFixed(1)).join(' / ')} % — ` +
          `${ok ? 'within' : 'OUTSIDE'} the 20–50 % target`,
      );
      if (!ok) process.exitCode = 1;
    }
    console.log(`results: ${writeResults('account-spread', { opts, sharded, legacy })}`);
  } finally {
    await redis?.close();
    stop();
  }
}

void main();
