import type { DriverHealth } from '@cdp/contracts';
import { identityKey, type Identifier } from '@cdp/domain';
import {
  IdentityIndex,
  IdentityNotWarmError,
  type FoundIdentity,
  type IdentityGraphRows,
} from '../identity-index.port.js';
import { MAX_MERGE, type ResolveInput, type Resolution } from '../resolution.js';
import { RebuildLocks, type RedisCommands, type RedisConnection } from '@cdp/redis';
import { fcall } from './redis-functions-loader.js';
import { FN } from './redis-functions.js';
import { keys, legacyKeys } from './redis-keys.js';
import { CUSTOMER_ENTRIES_LUA, decodeEntry, entrySlot } from './customer-entries.js';

/** Links (or merges) per script call of a rebuild: one round trip each, each a short call on the server. */
const CHUNK = 1000;
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

/**
 * A rebuild's links, as the store gives them (each identifier once, with its first owner, in link
 * order). KEYS[1]: the identity hash; ARGV[1] the account's key prefix, then per link: identity key,
 * customer, its born key, the customer_id value ('' unless the identifier is one). A customer keeps
 * the least born key of its links and the customer_id of its first, as AccountGraph.fromRows does.
 * Each customer entry touched is written once a chunk.
 */
const LOAD_LINKS = `${CUSTOMER_ENTRIES_LUA}
local p = ARGV[1]
local entries = {}
for i = 2, #ARGV, 4 do
  local key, customer, born, cid = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  redis.call('HSET', KEYS[1], key, customer)
  local e = entries[customer]
  if not e then
    e = entry_get(p, customer) or {born}
    entries[customer] = e
  end
  if born < e[1] then e[1] = born end
  e[#e + 1] = key
  if cid ~= '' then redis.call('HSETNX', p .. 'cids', customer, cid) end
end
for c, e in pairs(entries) do entry_set(p, c, e) end
return 1`;

/**
 * A rebuild's lowered born keys (ARGV[1] the prefix, then customer, born key pairs): each customer
 * linked before keeps the lesser of its key and this one.
 */
const LOAD_BORNS = `${CUSTOMER_ENTRIES_LUA}
local p = ARGV[1]
for i = 2, #ARGV, 2 do
  local customer, born = ARGV[i], ARGV[i + 1]
  local e = entry_get(p, customer)
  if e and born < e[1] then
    e[1] = born
    entry_set(p, customer, e)
  end
end
return 1`;

/**
 * A rebuild's merges, in the order they happened (ARGV[1] the prefix, then loser, survivor pairs):
 * each joins the customers the two belong to now, as cdp_resolve's merge does (the loser's identifiers
 * and absorbed customers move to the survivor, \`merged\` points each at it). KEYS[1]: the identity hash.
 */
const REPLAY_MERGES = `${CUSTOMER_ENTRIES_LUA}
local p = ARGV[1]
local ids, merged = KEYS[1], p .. 'merged'
local function survivor_of(c) return redis.call('HGET', merged, c) or c end
local entries, dirty = {}, {}
local function entry_of(c)
  local e = entries[c]
  if e == nil then
    e = entry_get(p, c) or {''}
    entries[c] = e
  end
  return e
end
for i = 2, #ARGV, 2 do
  local loser, survivor = survivor_of(ARGV[i]), survivor_of(ARGV[i + 1])
  if loser ~= survivor then
    local le, se = entry_of(loser), entry_of(survivor)
    local members = {}
    for k = 2, #le do
      members[k - 1] = le[k]
      se[#se + 1] = le[k]
    end
    add_all('HSET', ids, members, survivor)
    entries[loser] = {le[1]}
    dirty[loser], dirty[survivor] = true, true
    local lc = redis.call('HGET', p .. 'cids', loser)
    if lc then redis.call('HSETNX', p .. 'cids', survivor, lc) end
    local moved = redis.call('SMEMBERS', p .. 'a:' .. loser)
    table.insert(moved, 1, loser)
    redis.call('DEL', p .. 'a:' .. loser)
    add_all('HSET', merged, moved, survivor)
    add_all('SADD', p .. 'a:' .. survivor, moved)
  end
end
for c in pairs(dirty) do entry_set(p, c, entries[c]) end
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
  /** Accounts whose rebuild this instance began (beginRebuild) and has not loaded yet. */
  private readonly rebuilding = new Set<string>();
  private readonly locks: RebuildLocks;

  constructor(
    private readonly connection: RedisConnection,
    options: { rebuildLockMs?: number } = {},
  ) {
    super();
    this.redis = connection.commands;
    this.locks = new RebuildLocks(this.redis, options.rebuildLockMs);
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
   * orders came before it, those on the account's shards, so on any primary): it also waits until
   * those writes reached a replica on every primary, so the bus is acknowledged only for what a
   * failover cannot lose.
   */
  async settle(account: string, messages: string[]): Promise<void> {
    if (messages.length === 0) return;
    await this.redis
      .multi()
      .unlink(messages.map((m) => keys.unsettled(account, m)))
      .sRem(keys.unsettledMessages(account), messages)
      .execAsPipeline();
    await this.connection.waitForReplicas(REPLICA_WAIT_MS);
  }

  async lookup(account: string, id: Identifier): Promise<string | undefined> {
    return (await this.redis.hGet(keys.identities(account), identityKey(id))) ?? undefined;
  }

  async absorbedBy(account: string, customerId: string): Promise<string[]> {
    return (await this.redis.sMembers(keys.absorbed(account, customerId))).sort();
  }

  /** One call: the identity hash and the survivor's absorbed set share the account's slot. */
  override async find(account: string, id: Identifier): Promise<FoundIdentity | undefined> {
    // cdp_find answers a Redis array of ids (not the JSON text the batch functions answer; `fcall` is
    // typed for those).
    const reply = (await fcall(
      this.connection,
      FN.find,
      [keys.identities(account)],
      [keys.prefix(account), identityKey(id)],
    )) as unknown as string[];
    if (reply.length === 0) return undefined;
    const [customerId, ...absorbed] = reply;
    return { customerId: customerId!, absorbed: absorbed.sort() };
  }

  async identifiersOf(account: string, customerId: string): Promise<Identifier[]> {
    const survivor = (await this.redis.hGet(keys.merged(account), customerId)) ?? customerId;
    const { bucket, field } = entrySlot(survivor);
    const entry = await this.redis.hGet(keys.entries(account, bucket), field);
    return (entry ? decodeEntry(entry).slice(1) : []).map((key) => {
      const cut = key.indexOf('\u0000');
      return { kind: key.slice(0, cut), value: key.slice(cut + 1) };
    });
  }

  async closeAccount(account: string): Promise<void> {
    await this.redis.del(keys.ready(account));
  }

  async beginRebuild(account: string): Promise<boolean> {
    if (!(await this.locks.acquire(keys.rebuilding(account)))) return false;
    await this.redis.del(keys.ready(account));
    this.rebuilding.add(account);
    return true;
  }

  /**
   * Streams the store's graph into the account's keys, a chunk at a time, then opens the account again.
   * Nothing here grows with the account: links are written as they come (their first owner, as the
   * store gives it), then the born keys lowered without a link, then the merges are replayed in order by a script that does on the server what
   * cdp_resolve's merge does (re-point the loser's identifiers, keep `merged` current), so the union is
   * computed in Redis. Resolution is refused meanwhile (no ready marker), so nothing interleaves.
   */
  async load(account: string, rows: IdentityGraphRows): Promise<number> {
    await this.forget(account);
    const prefix = keys.prefix(account);
    const route = [keys.identities(account)];
    let links = 0;
    let chunk: string[] = [];
    const writeLinks = async () => {
      if (chunk.length) await this.redis.eval(LOAD_LINKS, { keys: route, arguments: [prefix, ...chunk] });
      chunk = [];
    };
    for await (const link of rows.links) {
      const cid = link.kind === 'customer_id' ? link.value : '';
      chunk.push(identityKey(link), link.svc_id, link.born, cid);
      links++;
      if (chunk.length >= CHUNK * 4) await writeLinks();
    }
    await writeLinks();
    for await (const { svc_id, born } of rows.borns) {
      chunk.push(svc_id, born);
      if (chunk.length >= CHUNK * 2) await this.loadScript(LOAD_BORNS, prefix, route, chunk.splice(0));
    }
    await this.loadScript(LOAD_BORNS, prefix, route, chunk.splice(0));
    let mergeSeq = 0;
    for await (const m of rows.merges) {
      mergeSeq = Math.max(mergeSeq, m.seq);
      chunk.push(m.loser, m.survivor);
      if (chunk.length >= CHUNK * 2) await this.replayMerges(prefix, route, chunk.splice(0));
    }
    await this.replayMerges(prefix, route, chunk.splice(0));
    const ready = new Date().toISOString();
    if (this.rebuilding.has(account)) {
      this.locks.stopRenewing(keys.rebuilding(account));
      const opened = await this.redis.eval(OPEN_IF_STILL_LOCKED, {
        keys: [keys.rebuilding(account), keys.mergeSeq(account), keys.ready(account)],
        arguments: [this.locks.owner, String(mergeSeq), ready],
      });
      this.rebuilding.delete(account);
      // Lost its lock (Redis flushed meanwhile): the account stays closed, the next batch rebuilds again.
      if (Number(opened) !== 1) throw new IdentityNotWarmError(account);
      return links;
    }
    const open = this.redis.multi();
    open.set(keys.mergeSeq(account), String(mergeSeq));
    open.set(keys.ready(account), ready);
    open.del(keys.rebuilding(account));
    await open.exec();
    return links;
  }

  private replayMerges(prefix: string, route: string[], pairs: string[]): Promise<void> {
    return this.loadScript(REPLAY_MERGES, prefix, route, pairs);
  }

  private async loadScript(script: string, prefix: string, route: string[], args: string[]): Promise<void> {
    if (args.length) await this.redis.eval(script, { keys: route, arguments: [prefix, ...args] });
  }

  /**
   * Ends what beginRebuild started, loaded or not: stops renewing the lock and, when the rebuild failed
   * before `load` opened the account, releases the lock (if still this process's) so the next batch
   * may rebuild at once instead of waiting for it to expire.
   */
  async endRebuild(account: string): Promise<void> {
    this.locks.stopRenewing(keys.rebuilding(account));
    if (this.rebuilding.delete(account)) await this.locks.release(keys.rebuilding(account));
  }

  /**
   * Deletes what the index holds of an account. Its customer buckets are in its `cb` set, the survivors
   * of its merges (whose absorbed sets are the only per-customer keys) are the values of `merged`, every
   * remembered message is in its `unsettled` set: the account's keys are found from those, without
   * scanning the keyspace of a Redis that may hold many accounts. An account held in layout 1 (before
   * the customer buckets) is found through its `born` hash, and removed too.
   */
  private async forget(account: string): Promise<void> {
    let doomed: string[] = [];
    const flush = async (force = false) => {
      if (doomed.length && (force || doomed.length >= 1000)) {
        await this.redis.unlink(doomed);
        doomed = [];
      }
    };
    for await (const buckets of this.connection.setMembers(keys.entryBuckets(account))) {
      doomed.push(...buckets.map((b) => keys.entries(account, b)));
      await flush();
    }
    for await (const entries of this.connection.hashEntries(keys.merged(account))) {
      for (const { value } of entries) doomed.push(keys.absorbed(account, value));
      await flush();
    }
    for await (const entries of this.connection.hashEntries(legacyKeys.born(account))) {
      for (const { field } of entries) {
        doomed.push(legacyKeys.members(account, field), keys.absorbed(account, field));
      }
      await flush();
    }
    doomed.push(legacyKeys.born(account), legacyKeys.ready(account));
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
