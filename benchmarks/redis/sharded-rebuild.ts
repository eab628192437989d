import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { IdentityGraphRows } from '@cdp/identity';
import { ShardedIdentityIndex } from '@cdp/identity/redis';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { freePort } from '../lib/free-port.js';
import { startRedis, usedMemory } from '../lib/private-redis.js';
import { figures, startCluster, stopNodes } from './loopback-cluster.js';
import { args, median, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * The sharded identity index's rebuild of one big account (issue 30, CDP_IDENTITY_SHARDING=shards): the
 * rebuilding process's peak RSS (getrusage maxrss) and time, on a private redis-server (no
 * persistence), one child process per run.
 *
 * The store's rows are generated as they are read (nothing held), so the peak is the driver's alone,
 * without the store engine's (benchmarks/ingest/redis-rebuild.ts measures a rebuild from chDB): customer
 * i has an email and a vuid (all emails stream first, then all vuids, so a customer's links are in
 * different chunks, as the store's slices give them), every 5th a customer_id, every 7th a lowered born
 * key; every 10th customer is merged into the one before, then every 100th survivor (i % 100 = 8) into
 * the customer 8 before it, so chains are replayed too.
 *
 * `--primaries N` (3 or more) rebuilds into a loopback cluster of N primaries instead (no replicas).
 *
 * `--chunk N` sets the driver's rows per rebuild chunk (0: its default).
 *
 * `--baseline <script>` runs another build's copy of this script (e.g. the release before, built into
 * another directory) alternately with this one, run by run, so both see the same load.
 *
 *   npm run build && node dist/benchmarks/redis/sharded-rebuild.js --customers 200000,1000000 --runs 3
 */

const customerId = (i: number) => `c_${i.toString(16).padStart(24, '0')}`;
const born = (i: number) => `b${String(1_000_000_000 + i)}`;

/** A generated stream as the store's reads give one: asynchronously, nothing held. */
async function* stream<T>(items: Iterable<T>): AsyncIterable<T> {
  for (const item of items) yield await Promise.resolve(item);
}

function generatedRows(customers: number): IdentityGraphRows {
  return {
    links: stream(
      (function* () {
        for (let i = 0; i < customers; i++)
          yield { kind: 'email', value: `customer${i}@example.com`, svc_id: customerId(i), born: born(i) };
        for (let i = 0; i < customers; i++) {
          yield { kind: 'vuid', value: `v-${i}`, svc_id: customerId(i), born: born(i) };
          if (i % 5 === 0)
            yield { kind: 'customer_id', value: `k-${i}`, svc_id: customerId(i), born: born(i) };
        }
      })(),
    ),
    borns: stream(
      (function* () {
        for (let i = 0; i < customers; i += 7) yield { svc_id: customerId(i), born: `a${i}` };
      })(),
    ),
    merges: stream(
      (function* () {
        let seq = 0;
        for (let i = 9; i < customers; i += 10)
          yield { loser: customerId(i), survivor: customerId(i - 1), seq: ++seq };
        for (let i = 108; i < customers; i += 100)
          yield { loser: customerId(i), survivor: customerId(i - 8), seq: ++seq };
      })(),
    ),
  };
}

/** A private redis-server, or a loopback cluster of `primaries` primaries; its used memory, summed. */
async function deployment(primaries: number): Promise<{
  client: RedisConnection;
  memory: () => Promise<number>;
  stop: () => Promise<void>;
}> {
  if (primaries <= 1) {
    const { client, stop } = await startRedis(await freePort());
    return { client, memory: () => usedMemory(client), stop };
  }
  const dir = mkdtempSync(join(tmpdir(), 'cdp-sharded-rebuild-'));
  const nodes = await startCluster(dir, primaries);
  try {
    const client = await connectRedis(nodes.map((n) => `redis://127.0.0.1:${n.port}`).join(','));
    return {
      client,
      memory: () => Promise.resolve(nodes.reduce((sum, n) => sum + figures(n.port).memory, 0)),
      stop: async () => {
        await client.close();
        stopNodes(nodes);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    stopNodes(nodes);
    throw err;
  }
}

async function rebuild(customers: number, primaries: number, chunk: number) {
  const { client, memory, stop } = await deployment(primaries);
  try {
    const base = await memory();
    const rssBefore = process.memoryUsage().rss;
    const index = new ShardedIdentityIndex(client, chunk > 0 ? { rebuildChunk: chunk } : {});
    const started = performance.now();
    if (!(await index.beginRebuild('acct'))) throw new Error('locked');
    let links: number;
    try {
      links = await index.load('acct', generatedRows(customers));
    } finally {
      await index.endRebuild('acct');
    }
    const seconds = (performance.now() - started) / 1000;
    // A spot check that the chains were replayed: 109 went into 108, then 108 (with 109) into 100.
    const nine = await index.identifiersOf('acct', customerId(109));
    const absorbed = await index.absorbedBy('acct', customerId(100));
    return {
      customers,
      links,
      seconds,
      rssBeforeMb: rssBefore / 2 ** 20,
      peakRssMb: process.resourceUsage().maxRSS / 1024,
      redisBytesPerCustomer: ((await memory()) - base) / customers,
      check: `${nine.length} ids, ${absorbed.length} absorbed`,
    };
  } finally {
    await stop();
  }
}

function child(script: string, ...argv: number[]): Record<string, unknown> {
  const out = execFileSync(process.execPath, [script, 'rebuild', ...argv.map(String)], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, unknown>;
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === 'rebuild') {
  process.stdout.write(
    `${JSON.stringify(await rebuild(Number(rest[0]), Number(rest[1] ?? 1), Number(rest[2] ?? 0)))}\n`,
  );
} else {
  const opt = args({ customers: '200000', runs: 1, baseline: '', primaries: 1, chunk: 0 });
  const builds: [string, string][] = [['this build', fileURLToPath(import.meta.url)]];
  if (opt.baseline) builds.unshift(['baseline', String(opt.baseline)]);
  const rows: Row[] = [];
  const results: Record<string, unknown>[] = [];
  for (const customers of String(opt.customers).split(',').map(Number)) {
    const runs = new Map<string, Record<string, unknown>[]>(builds.map(([name]) => [name, []]));
    for (let run = 0; run < Number(opt.runs); run++)
      for (const [name, script] of builds) {
        const r = {
          build: name,
          primaries: Number(opt.primaries),
          ...child(script, customers, Number(opt.primaries), Number(opt.chunk)),
          load: loadavg()[0],
        };
        results.push(r);
        runs.get(name)!.push(r);
        process.stderr.write(`${JSON.stringify(r)}\n`);
      }
    const med = (name: string, key: string) => median(runs.get(name)!.map((r) => Number(r[key])));
    for (const [name] of builds)
      rows.push({
        customers,
        build: name,
        primaries: Number(opt.primaries),
        runs: runs.get(name)!.length,
        'peak RSS MB': med(name, 'peakRssMb'),
        'RSS before MB': med(name, 'rssBeforeMb'),
        'rebuild s': med(name, 'seconds'),
        'Redis B/customer': med(name, 'redisBytesPerCustomer'),
        load: med(name, 'load'),
        check: String(runs.get(name)![0]!.check),
      });
  }
  printTable('Sharded identity index: rebuild of one account (medians)', rows);
  process.stdout.write(`${writeResults('sharded-rebuild', { results })}\n`);
}
