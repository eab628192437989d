import { randomUUID } from 'node:crypto';
import type { DriverHealth } from '@cdp/contracts';
import { identityKey, type Identifier } from '@cdp/domain';
import { IdentityIndex, IdentityNotWarmError, type IdentityGraphRows } from '../identity-index.port.js';
import { AccountGraph } from '../memory/account-graph.js';
import { MAX_MERGE, type ResolveInput, type Resolution } from '../resolution.js';
import type { RedisCommands, RedisConnection } from '@cdp/redis';
import { fcall } from './redis-functions-loader.js';
import { FN } from './redis-functions.js';
import { keys } from './redis-keys.js';

/** How long a rebuild may hold its lock before another process may take over. */
const REBUILD_LOCK_MS = 10 * 60 * 1000;
/** How long a batch waits for a replica to confirm its writes before it fails (and is redelivered). */
const REPLICA_WAIT_MS = 2000;

type RawResolution = [
  string,
  string,
  0 | 1,
  number[] | object,
  string[] | object,
  number,
  [string, string][] | object,
];

/**
 * Opens an account after a rebuild only if this rebuild still holds the lock it began with: a Redis
 * flushed (or restarted) in the middle of a rebuild lost the lock with everything loaded so far, and
 * marking such a half-loaded account ready would lose customers. KEYS: lock, merge counter, ready
 * marker; ARGV: owner, merge counter, ready value. Returns 1 when opened.
 */
const OPEN_IF_STILL_LOCKED = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SET', KEYS[3], ARGV[3])
redis.call('DEL', KEYS[1])
return 1`;

/** cjson encodes an empty array as {}. */
const list = <T>(v: T[] | object): T[] => (Array.isArray(v) ? (v as T[]) : []);

/**
 * The identity index in Redis (layout: redis-keys.ts). A batch is resolved by one function call,
 * atomically, running the rules of resolution.ts in Lua. Everything here can be rebuilt from the
 * store; a missing ready marker (flushed or fresh Redis) makes `resolve` refuse until it is.
 */
export class RedisIdentityIndex extends IdentityIndex {
  private readonly redis: RedisCommands;
  readonly persistent = true;
  private readonly owner = randomUUID();
  /** Accounts whose rebuild this instance began (beginRebuild) and has not loaded yet. */
  private readonly rebuilding = new Set<string>();

  constructor(private readonly connection: RedisConnection) {
    super();
    this.redis = connection.commands;
  }

  async resolve(account: string, records: ResolveInput[]): Promise<Resolution[]> {
    const messages: string[] = [];
    const number = new Map<string, number>();
    const r = records.map((rec) => {
      let m = number.get(rec.message);
      if (m === undefined) number.set(rec.message, (m = messages.push(rec.message)));
      const cidPos = rec.ids.findIndex((id) => id.kind === 'customer_id');
      const r: unknown[] = [
        m,
        rec.index,
        rec.seed,
        rec.born,
        rec.ids.map(identityKey),
        cidPos,
        cidPos >= 0 ? rec.ids[cidPos]!.value : '',
      ];
      if (rec.low?.length) r.push(rec.low);
      return r;
    });
    let raw: string;
    try {
      raw = await fcall(
        this.connection,
        FN.resolve,
        [keys.identities(account), keys.ready(account)],
        [keys.prefix(account), String(MAX_MERGE), JSON.stringify({ m: messages, r })],
      );
    } catch (err) {
      if (/CDP_NOT_WARM/.test(String(err))) throw new IdentityNotWarmError(account);
      throw err;
    }
    return (JSON.parse(raw) as RawResolution[]).map(
      ([customerId, born, created, linked, merged, mergeSeq, conflicts], i) => ({
        customerId,
        born,
        created: created === 1,
        linked: list<number>(linked).map((j) => records[i]!.ids[j]!),
        merged: list<string>(merged),
        mergeSeq,
        conflicts: list<[string, string]>(conflicts).map(([c, reason]) => ({
          customerId: c,
          reason: reason as Resolution['conflicts'][number]['reason'],
        })),
      }),
    );
  }

  /**
   * Settling is the batch's last write of the account's state (resolutions, profiles, consent and
   * orders came before it, on the same node): it also waits until those writes reached a replica, so
   * the bus is acknowledged only for what a failover of that primary cannot lose.
   */
  async settle(account: string, messages: string[]): Promise<void> {
    if (messages.length === 0) return;
    await this.redis
      .multi()
      .unlink(messages.map((m) => keys.unsettled(account, m)))
      .sRem(keys.unsettledMessages(account), messages)
      .execAsPipeline();
    await this.connection.waitForReplica(keys.ready(account), REPLICA_WAIT_MS);
  }

  async lookup(account: string, id: Identifier): Promise<string | undefined> {
    return (await this.redis.hGet(keys.identities(account), identityKey(id))) ?? undefined;
  }

  async absorbedBy(account: string, customerId: string): Promise<string[]> {
    return (await this.redis.sMembers(keys.absorbed(account, customerId))).sort();
  }

  async identifiersOf(account: string, customerId: string): Promise<Identifier[]> {
    const survivor = (await this.redis.hGet(keys.merged(account), customerId)) ?? customerId;
    const members = await this.redis.sMembers(keys.members(account, survivor));
    return members.map((key) => {
      const cut = key.indexOf('\u0000');
      return { kind: key.slice(0, cut), value: key.slice(cut + 1) };
    });
  }

  async beginRebuild(account: string): Promise<boolean> {
    const locked = await this.redis.set(keys.rebuilding(account), this.owner, {
      condition: 'NX',
      expiration: { type: 'PX', value: REBUILD_LOCK_MS },
    });
    if (locked !== 'OK') return false;
    await this.redis.del(keys.ready(account));
    this.rebuilding.add(account);
    return true;
  }

  /**
   * Computes the graph in memory from the store's rows, replaces the account's keys with it, then opens
   * the account again. Resolution is refused meanwhile (no ready marker), so nothing interleaves.
   */
  async load(account: string, rows: IdentityGraphRows): Promise<number> {
    const graph = await AccountGraph.fromRows(rows);
    await this.forget(account);
    let pipeline = this.redis.multi();
    let queued = 0;
    const flush = async (force = false) => {
      if (queued === 0 || (!force && queued < 1000)) return;
      await pipeline.execAsPipeline();
      pipeline = this.redis.multi();
      queued = 0;
    };
    const hashInChunks = async (key: string, entries: Iterable<[string, string]>) => {
      let chunk: Record<string, string> = {};
      let size = 0;
      for (const [field, value] of entries) {
        chunk[field] = value;
        if (++size === 1000) {
          pipeline.hSet(key, chunk);
          queued++;
          await flush();
          chunk = {};
          size = 0;
        }
      }
      if (size) {
        pipeline.hSet(key, chunk);
        queued++;
      }
    };
    await hashInChunks(keys.identities(account), graph.owners);
    await hashInChunks(keys.born(account), graph.born);
    await hashInChunks(keys.customerIds(account), graph.customerIds);
    await hashInChunks(keys.merged(account), graph.mergedInto);
    for (const [customer, ids] of graph.members) {
      pipeline.sAdd(keys.members(account, customer), ids.map(identityKey));
      queued++;
      await flush();
    }
    for (const [customer, losers] of graph.absorbed) {
      pipeline.sAdd(keys.absorbed(account, customer), losers);
      queued++;
      await flush();
    }
    await flush(true);
    const ready = new Date().toISOString();
    if (this.rebuilding.delete(account)) {
      const opened = await this.redis.eval(OPEN_IF_STILL_LOCKED, {
        keys: [keys.rebuilding(account), keys.mergeSeq(account), keys.ready(account)],
        arguments: [this.owner, String(graph.mergeSeq), ready],
      });
      // Lost its lock (Redis flushed meanwhile): the account stays closed, the next batch rebuilds again.
      if (Number(opened) !== 1) throw new IdentityNotWarmError(account);
      return graph.owners.size;
    }
    const open = this.redis.multi();
    open.set(keys.mergeSeq(account), String(graph.mergeSeq));
    open.set(keys.ready(account), ready);
    open.del(keys.rebuilding(account));
    await open.exec();
    return graph.owners.size;
  }

  /**
   * Deletes what the index holds of an account. Every customer it ever created is in its `born` hash,
   * every remembered message in its `unsettled` set: the account's keys are found from those, without
   * scanning the keyspace of a Redis that may hold many accounts.
   */
  private async forget(account: string): Promise<void> {
    let doomed: string[] = [];
    const flush = async (force = false) => {
      if (doomed.length && (force || doomed.length >= 1000)) {
        await this.redis.unlink(doomed);
        doomed = [];
      }
    };
    for await (const entries of this.connection.hashEntries(keys.born(account))) {
      for (const { field } of entries) {
        doomed.push(keys.members(account, field), keys.absorbed(account, field));
      }
      await flush();
    }
    for (const message of await this.redis.sMembers(keys.unsettledMessages(account))) {
      doomed.push(keys.unsettled(account, message));
    }
    doomed.push(...keys.graphKeys(account));
    await flush(true);
  }

  health(): Promise<DriverHealth> {
    return this.connection.health();
  }

  close(): Promise<void> {
    return Promise.resolve(); // the connection belongs to the drivers module
  }
}
