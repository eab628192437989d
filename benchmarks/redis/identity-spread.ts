import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { customerIdSeed, identifierList } from '@cdp/domain';
import { bornKey, type IdentityIndex, type ProfileState, type ResolveInput } from '@cdp/identity';
import {
  loadIdentityFunctions,
  RedisIdentityIndex,
  RedisProfileState,
  ShardedIdentityIndex,
  shardedKeys,
} from '@cdp/identity/redis';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { args, median, printTable, writeResults, type Row } from '../lib/stats.js';
import {
  cliBatch,
  figures,
  scanKeys,
  share,
  startCluster,
  stopNodes,
  type ClusterNode,
} from './loopback-cluster.js';

/**
 * How one account's identity index and profiles spread over a Redis Cluster (issue 30, "Measured
 * spread"): on a loopback cluster of 1 and of 3 primaries, one account's `--customers` new customers (an
 * email and a vuid each), then `--merges` records that join two of them (customer 2k's email with
 * customer 2k+1's vuid, identifiers on different shards), resolved, their profiles applied (the email;
 * a merge folds the loser) and settled in the processor's batches (10 messages of 1,000 records),
 * through the sharded index (CDP_IDENTITY_SHARDING=shards) and, for contrast, the single-tag index (the
 * default; the profiles are on the account's shards with either). Each primary's share of the account's keys, index entries and memory,
 * and each Redis process's CPU per record (INFO cpu, user + sys, over the load).
 *
 *   npm run build && node dist/benchmarks/redis/identity-spread.js --customers 20000 [--primaries 1,3]
 */
const opts = args({ customers: 20_000, merges: 0, primaries: '1,3', rounds: 1 });
const customers = Number(opts.customers);
const merges = Number(opts.merges) || Math.floor(customers / 10);
const PER_MESSAGE = 1_000;
const MESSAGES_PER_BATCH = 10;

const messageId = (m: number) => `${m.toString(16).padStart(8, '0')}-7c1e-4b2a-9f3d-5e8a1c2b3d4e`;

/** The records of one wave, message by message, as the bus would hand them to a processor. */
function* wave(count: number, first: number, ids: (k: number) => Record<string, string>) {
  for (let start = 0; start < count; start += PER_MESSAGE * MESSAGES_PER_BATCH) {
    const batch: ResolveInput[] = [];
    for (let k = start; k < Math.min(count, start + PER_MESSAGE * MESSAGES_PER_BATCH); k++) {
      const m = first + Math.floor(k / PER_MESSAGE);
      const message = messageId(m);
      const index = k % PER_MESSAGE;
      batch.push({
        ids: identifierList(ids(k)),
        seed: customerIdSeed(message, index),
        born: bornKey((1 + m) * 1000 + index),
        message,
        index,
      });
    }
    yield batch;
  }
}

async function resolveAll(index: IdentityIndex, profiles: ProfileState, account: string): Promise<number> {
  let merged = 0;
  let at = 0;
  const firstMerge = Math.ceil(customers / PER_MESSAGE) + 1;
  const waves = [
    wave(customers, 0, (k) => ({ email: `c${k}@example.com`, vuid: `v-${k}` })),
    wave(merges, firstMerge, (k) => ({ email: `c${2 * k}@example.com`, vuid: `v-${2 * k + 1}` })),
  ];
  for (const batches of waves)
    for (const batch of batches) {
      const out = await index.resolve(account, batch);
      merged += out.filter((r) => r.merged.length > 0).length;
      // Each record's profile update, as the processor gives it: its email, the customers it merged.
      await profiles.apply(
        account,
        out.map((r, i) => ({
          customerId: r.customerId,
          update: { email: batch[i]!.ids.find((id) => id.kind === 'email')!.value },
          ...(r.merged.length ? { absorb: r.merged } : {}),
          at: ++at,
        })),
      );
      await index.settle(account, [...new Set(batch.map((r) => r.message))]);
    }
  return merged;
}

interface Measured {
  keys: number[];
  entries: number[];
  memory: number[];
  cpuPerRecordUs: number[];
  seconds: number;
  merged: number;
}

/** Index entries (HLEN of the `ids` and `c` hashes) of the sharded account on each node. */
function shardedEntries(nodes: ClusterNode[], account: string): number[] {
  return nodes.map(({ port }) => {
    const hashes = [...scanKeys(port, `cdp:{${account}#*}:ids`), ...scanKeys(port, `cdp:{${account}#*}:c`)];
    if (hashes.length === 0) return 0;
    return cliBatch(
      port,
      hashes.map((k) => `HLEN ${k}`),
    ).reduce((sum, n) => sum + Number(n.replace(/\D/g, '')), 0);
  });
}

async function measure(
  nodes: ClusterNode[],
  index: IdentityIndex,
  profiles: ProfileState,
  account: string,
  sharded: boolean,
): Promise<Measured> {
  const before = nodes.map((n) => figures(n.port));
  const t0 = performance.now();
  const merged = await resolveAll(index, profiles, account);
  const seconds = (performance.now() - t0) / 1000;
  const after = nodes.map((n) => figures(n.port));
  const records = customers + merges;
  // The account's own tag and its shards: the profiles are on the shards with either index.
  const keys = nodes.map(
    (n) => scanKeys(n.port, `cdp:{${account}#*`).length + scanKeys(n.port, `cdp:{${account}}:*`).length,
  );
  return {
    keys,
    entries: sharded ? shardedEntries(nodes, account) : keys.map(() => 0),
    memory: after.map((a, i) => a.memory - before[i]!.memory),
    cpuPerRecordUs: after.map((a, i) => (1e6 * (a.cpu - before[i]!.cpu)) / records),
    seconds,
    merged,
  };
}

async function openAccount(
  redis: RedisConnection,
  index: IdentityIndex,
  profiles: ProfileState,
  account: string,
  sharded: boolean,
) {
  await profiles.load(account, none());
  if (sharded) {
    await redis.commands.set(shardedKeys.ready(account), 'new');
    return;
  }
  await index.beginRebuild(account);
  await index.load(account, { links: none(), borns: none(), merges: none() });
  await index.endRebuild(account);
}

async function* none(): AsyncIterable<never> {}

/** One row per primary, from the last round (a one-tag account's primary differs from round to round). */
function rowsOf(size: number, layout: string, nodes: ClusterNode[], last: Measured): Row[] {
  return nodes.map((n, i) => ({
    primaries: String(size),
    layout,
    primary: n.port,
    'keys %': share(last.keys, i),
    ...(last.entries.some((e) => e > 0) ? { 'entries %': share(last.entries, i) } : {}),
    'memory %': share(last.memory, i),
    'cpu µs/record': last.cpuPerRecordUs[i]!,
  }));
}

async function main() {
  const sizes = String(opts.primaries).split(',').map(Number);
  const rows: Row[] = [];
  const summary: Row[] = [];
  const results: Record<string, Measured[]> = {};
  let failed = false;
  for (const size of sizes) {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-idspread-'));
    // The shipped listpack settings matter to memory; the defaults are what an unconfigured cluster uses.
    const nodes = await startCluster(dir, size);
    const redis = await connectRedis(nodes.map((n) => `redis://127.0.0.1:${n.port}`).join(','));
    try {
      await loadIdentityFunctions(redis);
      for (const [layout, sharded] of [
        ['sharded', true],
        ['one tag', false],
      ] as const) {
        const runs: Measured[] = [];
        for (let r = 0; r < Number(opts.rounds); r++) {
          const account = `${sharded ? 'sh' : 'one'}${size}r${r}`;
          const index = sharded ? new ShardedIdentityIndex(redis) : new RedisIdentityIndex(redis);
          const profiles = new RedisProfileState(redis);
          await openAccount(redis, index, profiles, account, sharded);
          runs.push(await measure(nodes, index, profiles, account, sharded));
        }
        results[`${size}:${layout}`] = runs;
        const last = runs[runs.length - 1]!;
        rows.push(...rowsOf(size, layout, nodes, last));
        const total = (m: Measured) => m.cpuPerRecordUs.reduce((a, b) => a + b, 0);
        summary.push({
          primaries: String(size),
          layout,
          'records/s': (customers + merges) / median(runs.map((m) => m.seconds)),
          'Redis cpu µs/record, all primaries': median(runs.map(total)),
          'busiest primary cpu µs/record': median(runs.map((m) => Math.max(...m.cpuPerRecordUs))),
          'Redis bytes/customer': median(runs.map((m) => m.memory.reduce((a, b) => a + b, 0) / customers)),
          merged: last.merged,
        });
        if (sharded && size >= 3) {
          const shares = [last.keys, last.entries, last.memory].flatMap((v) =>
            nodes.map((_, i) => share(v, i)),
          );
          if (!shares.every((x) => x >= 20 && x <= 50)) failed = true;
        }
      }
    } finally {
      await redis.close();
      stopNodes(nodes);
      rmSync(dir, { recursive: true, force: true });
    }
  }
  printTable(
    `One account's ${customers.toLocaleString('en-US')} customers + ${merges.toLocaleString('en-US')} merging ` +
      `records, per primary (last round)`,
    rows,
  );
  printTable(`Per layout (median of ${String(opts.rounds)} rounds)`, summary);
  if (failed) {
    console.log('a primary holds a share of the sharded account OUTSIDE the 20–50 % target');
    process.exitCode = 1;
  }
  console.log(`results: ${writeResults('identity-spread', { opts, results })}`);
}

void main();
