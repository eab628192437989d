import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  applyAttributeUpdate,
  customerIdSeed,
  identifierList,
  type AttributeUpdate,
  type Attributes,
} from '@cdp/domain';
import { bornKey, resolveRecord, type IdentityGraph, type ResolveInput } from '@cdp/identity';
import {
  AccountGraph,
  CompactAccountGraph,
  MemoryIdentityIndex,
  MemoryProfileState,
} from '@cdp/identity/memory';
import { RedisIdentityIndex, RedisProfileState } from '@cdp/identity/redis';
import { ClickHouseStore, databaseName } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { startRedis, usedMemory } from '../lib/private-redis.js';
import { insertIdentityLinks, PER_MESSAGE, seededIds, T0 } from './identity-seed.js';
import { median } from '../lib/stats.js';

/**
 * The measurements of identity-memory.ts, one per child process (a fresh heap each, and chDB holds
 * one data directory a process). Each prints one JSON line.
 */

/** `count` customers from number `from` on, in messages of 1000 records like an ingest batch. */
export function customerRecords(from: number, count: number): ResolveInput[] {
  return Array.from({ length: count }, (_, i) => {
    const n = from + i;
    const message = messageId(Math.floor(n / PER_MESSAGE));
    const index = n % PER_MESSAGE;
    return {
      ids: identifierList({ email: emailOf(n), vuid: vuidOf(n) }),
      seed: customerIdSeed(message, index),
      born: bornKey((1 + Math.floor(n / PER_MESSAGE)) * 1000 + index),
      message,
      index,
    };
  });
}
const emailOf = (n: number) => `customer${n}@example.com`;
const vuidOf = (n: number) => `vuid-${n}`;
/** A request id's length and spread (a UUID). */
const messageId = (m: number) => `${m.toString(16).padStart(8, '0')}-7c1e-4b2a-9f3d-5e8a1c2b3d4e`;

const gc = (globalThis as { gc?: () => void }).gc;
function memory() {
  if (!gc) throw new Error('run with node --expose-gc');
  gc();
  gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, external: m.external, rss: m.rss };
}

/** What a measurement holds stays reachable from here until the process ends. */
const kept: unknown[] = [];

/** The old hot profiles (a snapshot object a customer in a map), the baseline of the compact ones. */
class ProfileMap {
  readonly profiles = new Map<string, { customerId: string; version: number; attributes: Attributes }>();
  apply(updates: { customerId: string; update: AttributeUpdate }[]): void {
    for (const { customerId, update } of updates) {
      const current = this.profiles.get(customerId);
      const attributes = applyAttributeUpdate({ ...(current?.attributes ?? {}) }, update);
      this.profiles.set(customerId, { customerId, version: (current?.version ?? 0) + 1, attributes });
    }
  }
}

/** Bytes a customer of the embedded index (and hot profiles) costs, `driver` compact (now) or maps (before). */
export async function measureMemory(driver: string, customers: number, withProfiles: boolean) {
  const before = memory();
  const started = performance.now();
  const index = new MemoryIdentityIndex();
  const profiles = new MemoryProfileState();
  const graph = new AccountGraph();
  const profileMap = new ProfileMap();
  kept.push(index, profiles, graph, profileMap);
  for (let at = 0; at < customers; at += 10 * PER_MESSAGE) {
    const records = customerRecords(at, Math.min(10 * PER_MESSAGE, customers - at));
    const resolutions =
      driver === 'compact'
        ? await index.resolve('acct', records)
        : records.map((r) => resolveRecord(graph, r));
    const updates = resolutions.map((r, i) => ({
      customerId: r.customerId,
      update: { email: emailOf(at + i) },
    }));
    if (withProfiles && driver === 'compact') await profiles.apply('acct', updates);
    if (withProfiles && driver !== 'compact') profileMap.apply(updates);
    await index.settle('acct', [...new Set(records.map((r) => r.message))]);
  }
  const seconds = (performance.now() - started) / 1000;
  const after = memory();
  const held = driver === 'compact' ? (await index.health()).detail : `${graph.owners.size} identifier(s)`;
  return {
    driver,
    customers,
    profiles: withProfiles,
    held,
    heapPerCustomer: (after.heap - before.heap) / customers,
    externalPerCustomer: (after.external - before.external) / customers,
    bytesPerCustomer: (after.heap + after.external - before.heap - before.external) / customers,
    rssPerCustomer: (after.rss - before.rss) / customers,
    seconds,
  };
}

/**
 * Resolve throughput of both graphs in one process: `customers` created in each (alternating
 * chunks), then rounds alternating between them, each resolving the same 100k records of known
 * customers (what most events are).
 */
export function measureSpeed(customers: number, rounds: number) {
  const graphs: [string, IdentityGraph<unknown>][] = [
    ['maps', new AccountGraph()],
    ['compact', new CompactAccountGraph()],
  ];
  const create: Record<string, number[]> = { maps: [], compact: [] };
  for (let at = 0; at < customers; at += 50_000) {
    const records = customerRecords(at, Math.min(50_000, customers - at));
    for (const [name, graph] of at % 100_000 ? graphs : [...graphs].reverse()) {
      const t = performance.now();
      for (const r of records) resolveRecord(graph, r);
      create[name]!.push(records.length / ((performance.now() - t) / 1000));
    }
  }
  const known: Record<string, number[]> = { maps: [], compact: [] };
  let seed = 12345;
  for (let round = 0; round < rounds; round++) {
    const records = Array.from({ length: 100_000 }, (_, i) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      const [r] = customerRecords(seed % customers, 1);
      return { ...r!, seed: `again:${round}:${i}`, message: `again-${round}`, index: i };
    });
    for (const [name, graph] of round % 2 ? graphs : [...graphs].reverse()) {
      const t = performance.now();
      for (const r of records) resolveRecord(graph, r);
      known[name]!.push(records.length / ((performance.now() - t) / 1000));
    }
  }
  const med = (o: Record<string, number[]>, k: string) => median(o[k]!);
  return {
    customers,
    rounds,
    createMaps: med(create, 'maps'),
    createCompact: med(create, 'compact'),
    createRatio: med(create, 'compact') / med(create, 'maps'),
    knownMaps: med(known, 'maps'),
    knownCompact: med(known, 'compact'),
    knownRatio: med(known, 'compact') / med(known, 'maps'),
    knownRounds: known,
  };
}

async function* none(): AsyncIterable<never> {}

/** Redis `used_memory` a customer of the index, and of its hot profile, resolved as the processor does. */
export async function measureRedis(customers: number, port: number) {
  const { client, stop } = await startRedis(port);
  try {
    const index = new RedisIdentityIndex(client);
    const profiles = new RedisProfileState(client);
    await index.beginRebuild('acct');
    await index.load('acct', { links: none(), borns: none(), merges: none() });
    const base = await usedMemory(client);
    const started = performance.now();
    const ids: string[] = [];
    for (let at = 0; at < customers; at += 10 * PER_MESSAGE) {
      const records = customerRecords(at, Math.min(10 * PER_MESSAGE, customers - at));
      for (const r of await index.resolve('acct', records)) ids.push(r.customerId);
      await index.settle('acct', [...new Set(records.map((r) => r.message))]);
    }
    const resolveSeconds = (performance.now() - started) / 1000;
    const withIndex = await usedMemory(client);
    for (let at = 0; at < customers; at += 10 * PER_MESSAGE) {
      const batch = ids.slice(at, at + 10 * PER_MESSAGE);
      await profiles.apply(
        'acct',
        batch.map((customerId, i) => ({ customerId, update: { email: emailOf(at + i) } })),
      );
    }
    const withProfiles = await usedMemory(client);
    return {
      customers,
      indexPerCustomer: (withIndex - base) / customers,
      profilesPerCustomer: (withProfiles - withIndex) / customers,
      totalPerCustomer: (withProfiles - base) / customers,
      resolveRate: customers / resolveSeconds,
    };
  } finally {
    await stop();
  }
}

/**
 * A rebuild from the store: `customers` customers (email + vuid links, one profile each) written into
 * a fresh chDB store by SQL, then read back by the store's own rebuild reads into the memory index and
 * hot profiles, as IdentityRebuild does at start (its other reads, memberships and identifier state,
 * are empty here). With a Redis port, the same rows are loaded into the Redis driver too.
 */
export async function measureRebuild(customers: number, redisPort: number) {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-identity-rebuild-'));
  const transport = new ChdbTransport(dir);
  const store = new ClickHouseStore(transport);
  try {
    await store.ensureAccount('acct');
    const db = databaseName('acct');
    const written = performance.now();
    await insertIdentityLinks(transport, db, customers);
    const { msg, svc } = seededIds();
    await transport.exec(
      `INSERT INTO ${db}.customers (svc_id, version, msg_id, updated_at, email)
       SELECT ${svc}, 1, ${msg}, toDateTime(${T0 / 1000}), concat('customer', toString(number), '@example.com')
       FROM numbers(${customers})`,
    );
    const writeSeconds = (performance.now() - written) / 1000;

    const before = memory();
    const started = performance.now();
    const profiles = new MemoryProfileState();
    const index = new MemoryIdentityIndex();
    const profileCount = await profiles.load('acct', store.currentProfiles('acct'));
    const profilesSeconds = (performance.now() - started) / 1000;
    const links = await index.load('acct', store.identityGraph('acct'));
    const seconds = (performance.now() - started) / 1000;
    const after = memory();
    const out: Record<string, number> = {
      customers,
      writeSeconds,
      links,
      profileCount,
      profilesSeconds,
      indexSeconds: seconds - profilesSeconds,
      seconds,
      bytesPerCustomer: (after.heap + after.external - before.heap - before.external) / customers,
      rssPerCustomer: (after.rss - before.rss) / customers,
    };
    await index.close();
    await profiles.close();
    if (redisPort) {
      const { client, stop } = await startRedis(redisPort);
      try {
        const redisIndex = new RedisIdentityIndex(client);
        const redisProfiles = new RedisProfileState(client, { requireLoaded: false });
        const t = performance.now();
        await redisIndex.beginRebuild('acct');
        await redisProfiles.load('acct', store.currentProfiles('acct'));
        await redisIndex.load('acct', store.identityGraph('acct'));
        out.redisSeconds = (performance.now() - t) / 1000;
      } finally {
        await stop();
      }
    }
    return out;
  } finally {
    await transport.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const [mode, ...rest] = process.argv.slice(2);
const num = (i: number) => Number(rest[i]);
const result =
  mode === 'memory'
    ? await measureMemory(rest[0]!, num(1), rest[2] === 'yes')
    : mode === 'speed'
      ? measureSpeed(num(0), num(1))
      : mode === 'redis'
        ? await measureRedis(num(0), num(1))
        : mode === 'rebuild'
          ? await measureRebuild(num(0), num(1))
          : undefined;
if (!result) throw new Error(`unknown measurement ${mode}`);
process.stdout.write(`${JSON.stringify(result)}\n`);
