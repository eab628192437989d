import { randomUUID } from 'node:crypto';
import type { DriverHealth } from '@cdp/contracts';
import type { Identifier } from '@cdp/domain';
import { InjectedFault, faultPoint, SHARDED_IDENTITY_POINTS as POINT } from '@cdp/faults';
import {
  EVERY_SHARD,
  accountShardPrefix,
  RebuildLocks,
  groupBy,
  shardPrefixOf,
  type RedisCommands,
  type RedisConnection,
} from '@cdp/redis';
import { IdentityIndex, IdentityNotWarmError, type IdentityGraphRows } from '../identity-index.port.js';
import { resolveRecord, type ResolveInput, type Resolution } from '../resolution.js';
import { idKey, idOfKey, ShardedBatchGraph, type ShardedEntry } from './sharded-batch-graph.js';
import {
  AccountLeases,
  accountStep,
  writeShard,
  writeShards,
  type Lease,
  type ShardOp,
} from './sharded-lease.js';

/** How long a batch waits for a replica to confirm its writes on a shard before it fails (and is redelivered). */
const REPLICA_WAIT_MS = 2000;
/**
 * Rows of the store (links, born keys, merges) per chunk of a rebuild: what the rebuild holds at once,
 * and one to three read rounds and one write round each. On a cluster a chunk's reads and writes are a
 * call per shard, so a chunk four times larger gives each call as many rows as a thousand would give it
 * on about 64 shards: at 200,000 customers on 3 primaries, 5.7 s and a peak RSS of 298 MB against 8.9 s
 * and 356 MB with 1,000 (benchmarks/redis/sharded-rebuild.ts).
 */
const CHUNK = { single: 1000, cluster: 4000 };

/**
 * Key layout of the sharded index (docs/architecture.md, "One account across the cluster"). On the
 * account's own tag: the lease and its epoch, the pending intents, the merge counter, the ready
 * marker. On a shard's tag `cdp:{A#hh}:`: `ids` (identifier `<kind>:<value>` → customer), `c`
 * (customer → entry), `fence` (the newest epoch that wrote there), `done:<intent>:<phase>` markers,
 * `msg:<message>` (a message's resolutions until settled) and `intent:<id>` (a batch's decision).
 */
export const shardedKeys = {
  lease: (a: string) => `cdp:{${a}}:ix:lease`,
  epoch: (a: string) => `cdp:{${a}}:ix:epoch`,
  pending: (a: string) => `cdp:{${a}}:ix:pending`,
  mergeSeq: (a: string) => `cdp:{${a}}:ix:mseq`,
  ready: (a: string) => `cdp:{${a}}:ix:ready:1`,
  rebuilding: (a: string) => `cdp:{${a}}:ix:rebuilding`,
  ids: (a: string, key: string) => `${shardPrefixOf(a, key)}ids`,
  entries: (a: string, customer: string) => `${shardPrefixOf(a, customer)}c`,
  message: (a: string, message: string) => `${shardPrefixOf(a, message)}msg:${message}`,
  intent: (a: string, message: string, id: string) => `${shardPrefixOf(a, message)}intent:${id}`,
};

/** The shard prefix a key of this layout starts with (`cdp:{A#hh}:`). */
const prefixOf = (key: string): string => key.slice(0, key.indexOf('}:') + 2);

/** A batch's decision: its writes, phase by phase, each phase's writes grouped by shard prefix. */
interface Intent {
  phases: Record<string, ShardOp[]>[];
}

/** HMGET on one shard's hash (one call per shard touched). */
const READ_FIELDS = `return redis.call('HMGET', KEYS[1], unpack(ARGV))`;
/** HMGET on several hashes in one call (a single server): ARGV[1] JSON [fields of KEYS[1], ...]. */
const READ_HASHES = `local out = {}
for i, fields in ipairs(cjson.decode(ARGV[1])) do out[i] = redis.call('HMGET', KEYS[i], unpack(fields)) end
return out`;

/**
 * HSET on several hashes in one call (the hashes of one shard on a cluster, of any shard on a single
 * server): KEYS the hashes; ARGV per hash its field count, then its fields and values. Fields go to HSET
 * 500 at a time, so no call outgrows Lua's stack.
 */
const WRITE_HASHES = `local at = 1
for k = 1, #KEYS do
  local last = at + 2 * tonumber(ARGV[at])
  local from = at + 1
  while from <= last do
    local to = math.min(from + 999, last)
    redis.call('HSET', KEYS[k], unpack(ARGV, from, to))
    from = to + 1
  end
  at = last + 1
end
return 1`;

/** Arguments per call of WRITE_HASHES, at most (about). */
const WRITE_ARGS = 20_000;

/** What a rebuild's chunk writes: hash → field → value (a field set twice keeps the last). */
class HashWrites {
  readonly hashes = new Map<string, Map<string, string>>();
  set(hash: string, field: string, value: string): void {
    let fields = this.hashes.get(hash);
    if (!fields) this.hashes.set(hash, (fields = new Map<string, string>()));
    fields.set(field, value);
  }
}

/** The items of a stream in arrays of `size` (the last may be shorter). */
async function* chunks<T>(items: AsyncIterable<T>, size: number): AsyncIterable<T[]> {
  let chunk: T[] = [];
  for await (const item of items) {
    chunk.push(item);
    if (chunk.length >= size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length) yield chunk;
}

/**
 * The identity index with an account's graph spread over its 256 shard tags, so one account spreads
 * over a cluster's primaries (CDP_IDENTITY_SHARDING=shards). A batch holds the account's lease, reads
 * the shards it touches, decides in the process (resolveRecord), stores that decision (the intent) on
 * its first message's shard, then writes it shard by shard, each write fenced by the lease's epoch and
 * skipped if already done: a crash anywhere leaves an intent the next holder finishes first.
 */
export class ShardedIdentityIndex extends IdentityIndex {
  readonly persistent = true;
  private readonly redis: RedisCommands;
  private readonly leases: AccountLeases;
  private readonly locks: RebuildLocks;
  private readonly rebuilding = new Set<string>();
  /** Store rows per chunk of a rebuild (tests make it small, so that chunks follow one another). */
  private readonly chunk: number;
  /** Arguments per write call of a rebuild, about (tests make it small, so that writes are cut). */
  private readonly writeArgs: number;

  constructor(
    private readonly connection: RedisConnection,
    options: {
      leaseMs?: number;
      rebuildLockMs?: number;
      rebuildChunk?: number;
      rebuildWriteArgs?: number;
    } = {},
  ) {
    super();
    this.redis = connection.commands;
    this.chunk = options.rebuildChunk ?? (connection.isCluster ? CHUNK.cluster : CHUNK.single);
    this.writeArgs = options.rebuildWriteArgs ?? WRITE_ARGS;
    this.leases = new AccountLeases(this.redis, options.leaseMs);
    this.locks = new RebuildLocks(this.redis, options.rebuildLockMs);
  }

  async resolve(account: string, records: ResolveInput[]): Promise<Resolution[]> {
    // Before waiting for the lease: a rebuild holds it for as long as it runs.
    if (!(await this.redis.exists(shardedKeys.ready(account)))) throw new IdentityNotWarmError(account);
    const lease = await this.leases.acquire(shardedKeys.lease(account), shardedKeys.epoch(account));
    try {
      const out = await this.resolveHolding(account, records, lease);
      await this.leases.release(lease);
      return out;
    } catch (err) {
      // An injected crash leaves the lease behind as a killed process would; it runs out by itself.
      if (err instanceof InjectedFault) this.leases.abandon(lease);
      else await this.leases.release(lease).catch(() => undefined);
      throw err;
    }
  }

  private async resolveHolding(
    account: string,
    records: ResolveInput[],
    lease: Lease,
  ): Promise<Resolution[]> {
    const [ready, mseq, pending] = await Promise.all([
      this.redis.exists(shardedKeys.ready(account)),
      this.redis.get(shardedKeys.mergeSeq(account)),
      this.redis.sMembers(shardedKeys.pending(account)),
    ]);
    if (!ready) throw new IdentityNotWarmError(account);
    for (const intent of pending) await this.finish(account, intent, lease);
    const messages = [...new Set(records.map((r) => r.message))];
    const stored = new Map<string, (Resolution | null)[]>();
    await Promise.all(
      messages.map(async (m) => {
        const text = await this.redis.get(shardedKeys.message(account, m));
        if (text) stored.set(m, JSON.parse(text) as (Resolution | null)[]);
      }),
    );
    const fresh = records.filter((r) => !stored.get(r.message)?.[r.index]);
    const out = new Map<ResolveInput, Resolution>();
    for (const r of records) {
      const s = stored.get(r.message)?.[r.index];
      if (s) out.set(r, s);
    }
    if (fresh.length) {
      const graph = await this.read(account, fresh, Number(mseq ?? 0));
      const byMessage = new Map<string, (Resolution | null)[]>();
      for (const r of fresh) {
        const resolution = resolveRecord(graph, r);
        out.set(r, resolution);
        let list = byMessage.get(r.message);
        if (!list) byMessage.set(r.message, (list = []));
        while (list.length < r.index) list.push(null);
        list[r.index] = resolution;
      }
      await this.decideAndWrite(account, graph, byMessage, fresh[0]!.message, lease);
    }
    return records.map((r) => out.get(r)!);
  }

  /** Reads what the rules need of the batch: its identifiers' owners, then those customers' entries. */
  private async read(account: string, records: ResolveInput[], mergeSeq: number): Promise<ShardedBatchGraph> {
    const idKeys = [...new Set(records.flatMap((r) => r.ids.map(idKey)))];
    const owners = await this.readFields((k) => shardedKeys.ids(account, k), idKeys);
    const customers = new Set<string>();
    for (const c of owners.values()) if (c !== undefined) customers.add(c);
    const raw = await this.readFields((c) => shardedKeys.entries(account, c), [...customers]);
    const entries = new Map<string, ShardedEntry>();
    for (const [c, text] of raw) if (text !== undefined) entries.set(c, JSON.parse(text) as ShardedEntry);
    return new ShardedBatchGraph(owners, entries, mergeSeq);
  }

  /**
   * Fields of hashes spread over shards: on a cluster one HMGET per shard, all at once; on a single
   * server one call for them all.
   */
  private async readFields(
    hashOf: (field: string) => string,
    fields: string[],
  ): Promise<Map<string, string | undefined>> {
    const byHash = groupBy(fields, hashOf);
    const out = new Map<string, string | undefined>();
    if (!this.connection.isCluster) {
      const lists = [...byHash.values()];
      const values = (await this.redis.eval(READ_HASHES, {
        keys: [...byHash.keys()],
        arguments: [JSON.stringify(lists)],
      })) as (string | null)[][];
      lists.forEach((list, h) => list.forEach((f, i) => out.set(f, values[h]![i] ?? undefined)));
      return out;
    }
    await Promise.all(
      [...byHash].map(async ([hash, list]) => {
        const values = (await this.redis.eval(READ_FIELDS, { keys: [hash], arguments: list })) as (
          string | null
        )[];
        list.forEach((f, i) => out.set(f, values[i] ?? undefined));
      }),
    );
    return out;
  }

  /**
   * Stores the batch's decision, lists it as pending (with the merge counter), then writes it: a crash
   * before the listing leaves nothing (the redelivery decides again), after it the next holder of the
   * lease finishes the writes before it reads anything.
   */
  private async decideAndWrite(
    account: string,
    graph: ShardedBatchGraph,
    byMessage: Map<string, (Resolution | null)[]>,
    first: string,
    lease: Lease,
  ): Promise<void> {
    const { losers, survivors, ids } = graph.changes();
    const entryOps = (list: [string, ShardedEntry][]): [string, ShardOp][] =>
      list.map(([c, e]) => {
        const hash = shardedKeys.entries(account, c);
        return [prefixOf(hash), ['h', hash, c, JSON.stringify(e)]];
      });
    const idOps = ids.map(([k, c]): [string, ShardOp] => {
      const hash = shardedKeys.ids(account, k);
      return [prefixOf(hash), ['h', hash, k, c]];
    });
    const markerOps = [...byMessage].map(([m, list]): [string, ShardOp] => {
      const key = shardedKeys.message(account, m);
      return [prefixOf(key), ['e', key, JSON.stringify(list)]];
    });
    const intent: Intent = {
      phases: [entryOps(losers), entryOps(survivors), idOps, markerOps].map((ops) => {
        const grouped: Record<string, ShardOp[]> = {};
        for (const [prefix, op] of ops) (grouped[prefix] ??= []).push(op);
        return grouped;
      }),
    };
    const key = shardedKeys.intent(account, first, randomUUID());
    await writeShard(this.redis, `${prefixOf(key)}fence`, '', lease.epoch, [
      ['e', key, JSON.stringify(intent)],
    ]);
    faultPoint(POINT.intentStored);
    await accountStep(this.redis, lease, this.accountKeys(account), 'add', key, graph.mergeSeq);
    // On a replica before any graph write: a failover that lost the intent or its listing would let the
    // redelivery decide again over phases already written.
    await Promise.all([
      this.connection.waitForReplica(key, REPLICA_WAIT_MS),
      this.connection.waitForReplica(shardedKeys.pending(account), REPLICA_WAIT_MS),
    ]);
    faultPoint(POINT.intentPending);
    await this.write(account, key, intent, lease);
  }

  /** Finishes an intent a crashed (or fenced) holder left pending. */
  private async finish(account: string, key: string, lease: Lease): Promise<void> {
    const text = await this.redis.get(key);
    if (text) await this.write(account, key, JSON.parse(text) as Intent, lease);
    else await accountStep(this.redis, lease, this.accountKeys(account), 'rem', key);
  }

  /** The intent's phases in order, each shard's part of a phase fenced and done once; then WAIT 1 on each. */
  private async write(account: string, key: string, intent: Intent, lease: Lease): Promise<void> {
    const points = [POINT.losersWritten, POINT.survivorsWritten, POINT.idsWritten, POINT.markersWritten];
    const written = new Set<string>([prefixOf(key)]);
    for (const [n, phase] of intent.phases.entries()) {
      const parts = Object.entries(phase).map(([prefix, ops]) => {
        written.add(prefix);
        return { fenceKey: `${prefix}fence`, doneKey: `${prefix}done:${key}:${n}`, ops };
      });
      await writeShards(this.redis, this.connection.isCluster, lease.epoch, parts);
      faultPoint(points[n]!);
    }
    await Promise.all([...written].map((p) => this.connection.waitForReplica(`${p}fence`, REPLICA_WAIT_MS)));
    await accountStep(this.redis, lease, this.accountKeys(account), 'rem', key);
    await this.redis.del(key);
  }

  private accountKeys(account: string) {
    return { pending: shardedKeys.pending(account), mergeSeq: shardedKeys.mergeSeq(account) };
  }

  /**
   * Forgets the messages' resolutions (the store holds their effects), and waits for a replica on every
   * primary: the batch's profiles, memberships and orders are on the account's shards.
   */
  async settle(account: string, messages: string[]): Promise<void> {
    if (messages.length === 0) return;
    await Promise.all(messages.map((m) => this.redis.del(shardedKeys.message(account, m))));
    await this.connection.waitForReplicas(REPLICA_WAIT_MS);
  }

  async lookup(account: string, id: Identifier): Promise<string | undefined> {
    const key = idKey(id);
    return (await this.redis.hGet(shardedKeys.ids(account, key), key)) ?? undefined;
  }

  /** A customer's entry, through the chain of merges to its survivor. */
  private async survivorEntry(account: string, customerId: string): Promise<ShardedEntry | undefined> {
    let c = customerId;
    for (let hops = 0; hops < 1000; hops++) {
      const text = await this.redis.hGet(shardedKeys.entries(account, c), c);
      if (!text) return undefined;
      const e = JSON.parse(text) as ShardedEntry;
      if (e.s === undefined) return e;
      c = e.s;
    }
    throw new Error(`a merge chain of ${customerId} does not end`);
  }

  async absorbedBy(account: string, customerId: string): Promise<string[]> {
    const text = await this.redis.hGet(shardedKeys.entries(account, customerId), customerId);
    const e = text ? (JSON.parse(text) as ShardedEntry) : undefined;
    return e && e.s === undefined ? [...e.a].sort() : [];
  }

  async identifiersOf(account: string, customerId: string): Promise<Identifier[]> {
    return ((await this.survivorEntry(account, customerId))?.i ?? []).map(idOfKey);
  }

  async closeAccount(account: string): Promise<void> {
    await this.redis.del(shardedKeys.ready(account));
  }

  async beginRebuild(account: string): Promise<boolean> {
    if (!(await this.locks.acquire(shardedKeys.rebuilding(account)))) return false;
    await this.redis.del(shardedKeys.ready(account));
    this.rebuilding.add(account);
    return true;
  }

  /**
   * Replaces the account's sharded graph with the store's, streamed a chunk at a time so that nothing
   * held here grows with the account (docs/architecture.md, "One account across the cluster", Rebuild):
   * the links, then the born keys lowered without a link, then the merges replayed in their order; then
   * the account opens with its own marker.
   */
  async load(account: string, rows: IdentityGraphRows): Promise<number> {
    // Under the lease, with every shard fenced at its epoch: a batch that began before the rebuild has
    // ended, and one whose lease ran out meanwhile cannot write over the rebuilt graph.
    const lease = await this.leases.acquire(shardedKeys.lease(account), shardedKeys.epoch(account));
    try {
      return await this.loadHolding(account, rows, lease);
    } finally {
      await this.leases.release(lease).catch(() => undefined);
    }
  }

  private async loadHolding(account: string, rows: IdentityGraphRows, lease: Lease): Promise<number> {
    const shards = EVERY_SHARD.map((s) => accountShardPrefix(account, s));
    await Promise.all(shards.map((p) => writeShard(this.redis, `${p}fence`, '', lease.epoch, [])));
    await this.forget(account, shards);
    let links = 0;
    for await (const chunk of chunks(rows.links, this.chunk)) {
      await this.loadLinks(account, chunk);
      links += chunk.length;
    }
    for await (const chunk of chunks(rows.borns, this.chunk)) await this.loadBorns(account, chunk);
    let mergeSeq = 0;
    for await (const chunk of chunks(rows.merges, this.chunk)) {
      for (const m of chunk) mergeSeq = Math.max(mergeSeq, m.seq);
      await this.replayMerges(account, chunk);
    }
    await this.redis.set(shardedKeys.mergeSeq(account), String(mergeSeq));
    if (this.rebuilding.has(account)) {
      this.locks.stopRenewing(shardedKeys.rebuilding(account));
      this.rebuilding.delete(account);
      if ((await this.redis.get(shardedKeys.rebuilding(account))) !== this.locks.owner)
        throw new IdentityNotWarmError(account);
      await this.redis.del(shardedKeys.rebuilding(account));
    }
    await this.redis.set(shardedKeys.ready(account), new Date().toISOString());
    return links;
  }

  /**
   * A chunk of the store's links: each identifier to its owner (the store gives each once, with its
   * first owner), and each owner's entry extended, read first since a customer's links come in different
   * chunks (the store's slices are by identifier). A customer keeps the least born key of its links and
   * the customer_id of its first, as AccountGraph.fromRows does.
   */
  private async loadLinks(
    account: string,
    chunk: { kind: string; value: string; svc_id: string; born: string }[],
  ): Promise<void> {
    const entries = await this.readEntries(
      account,
      chunk.map((l) => l.svc_id),
    );
    const writes = new HashWrites();
    for (const link of chunk) {
      const key = idKey(link);
      writes.set(shardedKeys.ids(account, key), key, link.svc_id);
      let e = entries.get(link.svc_id);
      if (!e) entries.set(link.svc_id, (e = { b: link.born, i: [], a: [] }));
      if (link.born < e.b) e.b = link.born;
      e.i.push(key);
      if (link.kind === 'customer_id' && e.k === undefined) e.k = link.value;
    }
    for (const [c, e] of entries) if (e) writes.set(shardedKeys.entries(account, c), c, JSON.stringify(e));
    await this.writeHashes(writes);
  }

  /** A chunk of born keys lowered without a link: a customer linked before keeps the lesser key. */
  private async loadBorns(account: string, chunk: { svc_id: string; born: string }[]): Promise<void> {
    const entries = await this.readEntries(
      account,
      chunk.map((b) => b.svc_id),
    );
    const writes = new HashWrites();
    for (const { svc_id, born } of chunk) {
      const e = entries.get(svc_id);
      if (e && born < e.b) {
        e.b = born;
        writes.set(shardedKeys.entries(account, svc_id), svc_id, JSON.stringify(e));
      }
    }
    await this.writeHashes(writes);
  }

  /**
   * A chunk of merges, in their order: each joins the customers the two belong to now, as
   * AccountGraph.merge does. Every loser's entry names its final survivor at the end of each chunk (a
   * loser's absorbed customers are re-pointed when it is merged), so a customer's survivor before the
   * chunk is one read away: the chunk reads its customers' entries, then their survivors', replays the
   * merges on those in the process, then re-points the losers' earlier absorbed customers and writes
   * everything it changed in one round. A chunk's merges thus cost a few round trips together, however
   * they depend on each other; what is held is the chunk's customers' entries.
   */
  private async replayMerges(
    account: string,
    chunk: { loser: string; survivor: string; seq: number }[],
  ): Promise<void> {
    const entries = await this.readEntries(
      account,
      chunk.flatMap((m) => [m.loser, m.survivor]),
    );
    const before = [...entries.values()].flatMap((e) =>
      e?.s !== undefined && !entries.has(e.s) ? [e.s] : [],
    );
    for (const [c, e] of await this.readEntries(account, before)) entries.set(c, e);
    /** Survivors changed in this chunk: every customer moved, to the survivor it ends with so far. */
    const moved = new Map<string, string>();
    const survivorOf = (c: string) => moved.get(c) ?? entries.get(c)?.s ?? c;
    const entry = (c: string): ShardedEntry => {
      let e = entries.get(c);
      // A customer without links (none in what the store gives): an entry all the same, so that the
      // identifiers moved to it are found and later merges follow it.
      if (!e) entries.set(c, (e = { b: '', i: [], a: [] }));
      return e;
    };
    const changed = new Set<string>();
    const owners = new Map<string, string>();
    for (const m of chunk) {
      const from = survivorOf(m.loser);
      const to = survivorOf(m.survivor);
      if (from === to) continue;
      const l = entry(from);
      const s = entry(to);
      for (const key of l.i) owners.set(key, to);
      s.i.push(...l.i);
      if (s.k === undefined && l.k !== undefined) s.k = l.k;
      const absorbed = [from, ...l.a];
      s.a.push(...absorbed);
      for (const c of absorbed) moved.set(c, to);
      const loser: ShardedEntry = { b: l.b, i: [], a: [] };
      if (l.k !== undefined) loser.k = l.k;
      entries.set(from, loser);
      changed.add(from).add(to);
    }
    // Customers absorbed before this chunk by a loser of it: their entries are read to name the new survivor.
    const absent = [...moved.keys()].filter((c) => !entries.has(c));
    for (const [c, e] of await this.readEntries(account, absent)) entries.set(c, e);
    for (const [c, s] of moved) {
      const e = entries.get(c);
      if (e && e.s !== s) {
        e.s = s;
        changed.add(c);
      }
    }
    const writes = new HashWrites();
    for (const [key, c] of owners) writes.set(shardedKeys.ids(account, key), key, c);
    for (const c of changed) writes.set(shardedKeys.entries(account, c), c, JSON.stringify(entries.get(c)));
    await this.writeHashes(writes);
  }

  /** Customers' entries (absent: undefined), each read once however often named. */
  private async readEntries(
    account: string,
    customers: string[],
  ): Promise<Map<string, ShardedEntry | undefined>> {
    const out = new Map<string, ShardedEntry | undefined>();
    if (customers.length === 0) return out;
    const raw = await this.readFields((c) => shardedKeys.entries(account, c), [...new Set(customers)]);
    for (const [c, text] of raw)
      out.set(c, text === undefined ? undefined : (JSON.parse(text) as ShardedEntry));
    return out;
  }

  /**
   * Hash fields over many shards: on a single server one call for them all, on a cluster one call per
   * shard (its hashes share its slot), all at once; either cut where a call would pass more than
   * WRITE_ARGS arguments (the client spreads a call's arguments onto the stack: 50,000 overflowed it).
   */
  private async writeHashes(writes: HashWrites): Promise<void> {
    const groups = this.connection.isCluster
      ? [...groupBy(writes.hashes, ([hash]) => prefixOf(hash)).values()]
      : [[...writes.hashes]];
    const calls: { keys: string[]; arguments: string[] }[] = [];
    for (const hashes of groups) {
      let call = { keys: [] as string[], arguments: [] as string[] };
      for (const [hash, fields] of hashes) {
        let part: string[] = [];
        const flush = () => {
          if (part.length === 0) return;
          call.keys.push(hash);
          call.arguments.push(String(part.length / 2), ...part);
          part = [];
        };
        for (const [field, value] of fields) {
          part.push(field, value);
          if (call.arguments.length + part.length >= this.writeArgs) {
            flush();
            calls.push(call);
            call = { keys: [], arguments: [] };
          }
        }
        flush();
      }
      if (call.keys.length) calls.push(call);
    }
    await Promise.all(calls.map((call) => this.redis.eval(WRITE_HASHES, call)));
  }

  async endRebuild(account: string): Promise<void> {
    this.locks.stopRenewing(shardedKeys.rebuilding(account));
    if (this.rebuilding.delete(account)) await this.locks.release(shardedKeys.rebuilding(account));
  }

  /** Deletes the account's graph on every shard, and its pending intents. */
  private async forget(account: string, shards: string[]): Promise<void> {
    await Promise.all(shards.flatMap((p) => [this.redis.unlink(`${p}ids`), this.redis.unlink(`${p}c`)]));
    for (const key of await this.redis.sMembers(shardedKeys.pending(account))) await this.redis.unlink(key);
    await this.redis.unlink(shardedKeys.pending(account));
  }

  health(): Promise<DriverHealth> {
    return this.connection.health();
  }

  close(): Promise<void> {
    return Promise.resolve(); // the connection belongs to the drivers module
  }
}
