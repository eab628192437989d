import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { freePort } from '../lib/free-port.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisIdempotencyStore } from '@cdp/idempotency/redis';
import { RedisRateLimiter } from '@cdp/rate-limits/redis';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { args, median, printTable, writeResults, type Row } from '../lib/stats.js';

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

interface Node {
  port: number;
  proc: ChildProcess;
}

const cli = (port: number, ...a: string[]) =>
  execFileSync('redis-cli', ['-p', String(port), ...a], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['ignore', 'pipe', 'pipe'],
  });

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      if (check()) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startCluster(dir: string, size: number): Promise<Node[]> {
  const ports: number[] = [];
  while (ports.length < size) {
    const port = await freePort();
    if (!ports.includes(port) && port + 10000 < 65536) ports.push(port);
  }
  const nodes = ports.map((port) => ({
    port,
    proc: spawn(
      'redis-server',
      [
        '--bind',
        '127.0.0.1',
        '--port',
        String(port),
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    ),
  }));
  for (const { port } of nodes) await until(() => cli(port, 'PING').includes('PONG'), 10_000, `port ${port}`);
  if (size >= 3) {
    execFileSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { stdio: 'ignore' },
    );
  } else {
    // `--cluster create` wants three primaries: one node (the 1-primary baseline) takes every slot itself.
    if (size !== 1) throw new Error('--primaries must be 1 or at least 3');
    cli(ports[0]!, 'CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
  }
  await until(
    () => nodes.every((n) => cli(n.port, 'CLUSTER', 'INFO').includes('cluster_state:ok')),
    30_000,
    'cluster_state:ok',
  );
  return nodes;
}

/** A node's figures: used memory (bytes) and Redis CPU (user + sys, seconds). */
function figures(port: number): { memory: number; cpu: number } {
  const mem = Number(/used_memory:(\d+)/.exec(cli(port, 'INFO', 'memory'))![1]);
  const cpu = cli(port, 'INFO', 'cpu');
  const user = Number(/used_cpu_user:([\d.]+)/.exec(cpu)![1]);
  const sys = Number(/used_cpu_sys:([\d.]+)/.exec(cpu)![1]);
  return { memory: mem, cpu: user + sys };
}

/** Keys of `pattern` on one node (SCAN, not KEYS: no long command on the server). */
function countKeys(port: number, pattern: string): number {
  const out = cli(port, '--scan', '--pattern', pattern);
  return out.split('\n').filter(Boolean).length;
}

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
async function phase(nodes: Node[], pattern: string, write: () => Promise<void>): Promise<Measured> {
  const before = nodes.map((n) => figures(n.port));
  const t0 = performance.now();
  await write();
  const seconds = (performance.now() - t0) / 1000;
  const after = nodes.map((n) => figures(n.port));
  return {
    keys: nodes.map((n) => countKeys(n.port, pattern)),
    memory: after.map((a, i) => a.memory - before[i]!.memory),
    cpuPerRecordUs: after.map((a, i) => (1e6 * (a.cpu - before[i]!.cpu)) / Number(opts.records)),
    seconds,
  };
}

const share = (values: number[], i: number) => (100 * values[i]!) / values.reduce((a, b) => a + b, 0);

/** One row per primary: shares of the last round, CPU per record the median over the rounds. */
function rowsOf(nodes: Node[], layout: string, runs: Measured[]): Row[] {
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
  let nodes: Node[] = [];
  let redis: RedisConnection | undefined;
  const stop = () => {
    for (const n of nodes) if (n.proc.exitCode === null) n.proc.kill('SIGKILL');
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
