import type { DriverHealth } from '@cdp/contracts';
import type { AttributeValue, Attributes, Identifier } from '@cdp/domain';
import {
  ProfileState,
  type ProfileSnapshot,
  type ProfileUpdate,
  type StoredProfile,
} from '../profile-state.port.js';
import { IdentityNotWarmError } from '../identity-index.port.js';
import { faultPoint, PROFILE_POINTS } from '@cdp/faults';
import {
  accountShard,
  accountShardPrefix,
  EVERY_SHARD,
  addToSets,
  membersOfSets,
  groupBy,
  OncePerAccount,
  type RedisCommands,
  type RedisConnection,
  setsHold,
  WriteRounds,
} from '@cdp/redis';
import { foldedProfile } from '../profile-fold.js';
import type { FieldTimes } from '../field-order.js';
import { fcall } from './redis-functions-loader.js';
import { FN } from './redis-functions.js';
import { keys, legacyKeys, profileKeys } from './redis-keys.js';
import { customerOfSlot, entrySlot } from './customer-entries.js';

const VERSION_FIELD = '__v';
/** Marks a redacted profile (cdp_apply). */
const REDACTED_FIELD = '__r';
/** `__t:<field>`: the acceptance order of the update that last wrote the field (cdp_apply). */
const TIME_PREFIX = '__t:';
const poolMember = (id: Identifier) => `${id.kind}:${id.value}`;

const under = profileKeys.under;

/**
 * A batch's updates in rounds, in order, for a cluster: a round ends before an update that absorbs, from
 * another shard, a customer an update of the round changed, so the loser is read with that change.
 */
export function mergeRounds(updates: readonly ProfileUpdate[]): ProfileUpdate[][] {
  const rounds: ProfileUpdate[][] = [[]];
  let changed = new Set<string>();
  for (const u of updates) {
    const home = accountShard(u.customerId);
    if ((u.absorb ?? []).some((l) => accountShard(l) !== home && changed.has(l))) {
      rounds.push([]);
      changed = new Set();
    }
    rounds.at(-1)!.push(u);
    changed.add(u.customerId);
  }
  return rounds;
}

/** Pool members by the key of their account shard's set. */
const poolSets = (account: string, members: Iterable<string>) =>
  groupBy(members, (member) => keys.optOutPool(account, accountShard(member)));

/** Profiles written per round of a rebuild (single commands sent together, on many shards). */
const LOAD_ROUND = 1000;
/** How often a loser changed between its read and its retirement is read and folded again. */
const RETIRE_ATTEMPTS = 10;

/** A loser on another shard than its survivor's, as read before the fold: its hash and its kept copy. */
interface OutsideLoser {
  flat: string[];
  kept: string[];
}

/**
 * Hot profiles in Redis: one hash per customer on its account shard (profileKeys), each value
 * JSON-encoded (so booleans stay booleans), and a version counter. On a single server a batch is one
 * function call over every shard it touches, atomically, as before the sharding. On a cluster a call
 * touches one shard: a batch is applied as one call per shard, and a merge whose loser is on another
 * shard than its survivor in two steps (docs/architecture.md, "Profiles across the shards"): the loser's
 * hash is read and folded into the survivor (cdp_apply; fields win by acceptance order, so a fold done
 * twice changes nothing), then retired on its own shard if it did not change since it was read
 * (cdp_retire; else it is read and folded again). A crash between the two leaves both hashes; the
 * redelivery folds the loser again and retires it, and a read meanwhile folds it as `get` does.
 */
export class RedisProfileState extends ProfileState {
  private readonly redis: RedisCommands;
  /** Accounts whose opt-out pool this process has checked for (and moved from) its one set before the sharding. */
  private readonly poolMoved = new OncePerAccount((account) => this.movePoolFromLegacy(account));
  constructor(
    private readonly connection: RedisConnection,
    /**
     * Refuse updates (IdentityNotWarmError) on a shard whose profiles are not loaded (its ready marker,
     * set by `load`, is missing): after a flush, a batch resolved before it must not write partial
     * profiles. Off only where profiles are used without a rebuild (the contract suite).
     */
    private readonly options: { requireLoaded: boolean } = { requireLoaded: true },
  ) {
    super();
    this.redis = connection.commands;
  }

  async apply(account: string, updates: ProfileUpdate[]): Promise<ProfileSnapshot[]> {
    if (updates.length === 0) return [];
    if (!this.connection.isCluster) return this.call(account, updates, new Map());
    // A customer's last row wins: one changed twice over rounds, or merged after an update.
    const rows = new Map<string, ProfileSnapshot>();
    for (const round of mergeRounds(updates))
      for (const row of await this.applyRound(account, round)) rows.set(row.customerId, row);
    return [...rows.values()];
  }

  /**
   * One round on a cluster: the losers on another shard than their survivor's are read, every shard's
   * updates applied at once (one call each), then those losers retired.
   */
  private async applyRound(account: string, updates: ProfileUpdate[]): Promise<ProfileSnapshot[]> {
    const survivorOf = new Map<string, ProfileUpdate>();
    for (const u of updates)
      for (const loser of u.absorb ?? [])
        if (accountShard(loser) !== accountShard(u.customerId)) survivorOf.set(loser, u);
    const outside = new Map<string, OutsideLoser>();
    await Promise.all(
      [...survivorOf.keys()].map(async (l) => outside.set(l, await this.readLoser(account, l))),
    );
    const groups = groupBy(updates, (u) => accountShard(u.customerId));
    const calls = await Promise.allSettled([...groups.values()].map((g) => this.call(account, g, outside)));
    // Every call has ended before this throws: none of this batch's writes lands after a rebuild it starts.
    const failed = calls.find((c): c is PromiseRejectedResult => c.status === 'rejected');
    if (failed) throw failed.reason;
    const rows = calls.flatMap((c) => (c.status === 'fulfilled' ? c.value : []));
    faultPoint(PROFILE_POINTS.folded);
    const again = await Promise.all(
      [...outside].map(([loser, read]) => this.retire(account, loser, read, survivorOf.get(loser)!)),
    );
    return [...rows, ...again.flat()];
  }

  /**
   * Retires a loser folded into its survivor; one that changed since it was read (an update resolved
   * before the merge, applied by another processor meanwhile) is read and folded again first. Answers
   * the rows of those folds again.
   */
  private async retire(
    account: string,
    loser: string,
    read: OutsideLoser,
    survivor: ProfileUpdate,
  ): Promise<ProfileSnapshot[]> {
    const refold: ProfileUpdate = { customerId: survivor.customerId, update: {}, absorb: [loser] };
    let rows: ProfileSnapshot[] = [];
    for (let attempt = 0; read.flat.length > 0; attempt++) {
      const version = read.flat[read.flat.indexOf(VERSION_FIELD) + 1]!;
      const retired = await fcall(
        this.connection,
        FN.retire,
        [profileKeys.profile(account, loser)],
        [profileKeys.prefixOf(account, loser), loser, version],
      );
      if (Number(retired) === 1) break;
      if (attempt === RETIRE_ATTEMPTS) throw new Error(`profile ${loser} kept changing while merged`);
      read = await this.readLoser(account, loser);
      rows = await this.call(account, [refold], new Map([[loser, read]]));
    }
    return rows;
  }

  private async readLoser(account: string, loser: string): Promise<OutsideLoser> {
    const [hash, kept] = await Promise.all([
      this.redis.hGetAll(profileKeys.profile(account, loser)),
      this.redis.hGetAll(profileKeys.mergedProfile(account, loser)),
    ]);
    return { flat: Object.entries(hash).flat(), kept: Object.entries(kept).flat() };
  }

  /**
   * One function call: the updates' own customers are its keys (one shard's on a cluster), the losers
   * read from other shards (`outside`) its arguments.
   */
  private async call(
    account: string,
    updates: ProfileUpdate[],
    outside: ReadonlyMap<string, OutsideLoser>,
  ): Promise<ProfileSnapshot[]> {
    const own: string[] = [];
    const others: string[] = [];
    for (const u of updates)
      for (const c of [u.customerId, ...(u.absorb ?? [])]) (outside.has(c) ? others : own).push(c);
    const customers = [...new Set(own), ...new Set(others)];
    const ownCount = new Set(own).size;
    const slot = new Map(customers.map((c, i) => [c, i]));
    const encoded = updates.map(({ customerId, update, absorb = [], redact = false, at }) => {
      const fields: Record<string, string | null> = {};
      for (const [field, value] of Object.entries(update))
        fields[field] = value === null ? null : JSON.stringify(value);
      // `at` as decimal text: Lua numbers print with 14 digits, so Redis stores the exact text instead.
      const entry: unknown[] = [slot.get(customerId), fields, absorb.map((l) => slot.get(l)), redact ? 1 : 0];
      if (at !== undefined) entry.push(String(at));
      return entry;
    });
    let raw: string;
    try {
      raw = await fcall(
        this.connection,
        FN.apply,
        customers.slice(0, ownCount).map((c) => profileKeys.profile(account, c)),
        [
          JSON.stringify(encoded),
          JSON.stringify(customers),
          JSON.stringify(customers.map((c) => profileKeys.prefixOf(account, c))),
          this.options.requireLoaded ? '1' : '0',
          JSON.stringify(customers.slice(ownCount).map((c) => [outside.get(c)!.flat, outside.get(c)!.kept])),
        ],
      );
    } catch (err) {
      if (/CDP_NOT_WARM/.test(String(err))) throw new IdentityNotWarmError(account);
      throw err;
    }
    // cjson encodes an empty array as {}.
    const rows = JSON.parse(raw) as [number, string[] | object, number][] | object;
    return (Array.isArray(rows) ? rows : []).map(
      ([i, flat, survivor]: [number, string[] | object, number]) => {
        const snap = snapshot(customers[i]!, Array.isArray(flat) ? (flat as string[]) : []);
        if (survivor < 0) return snap;
        return { ...snap, version: snap.version + 1, mergedInto: customers[survivor]! };
      },
    );
  }

  /**
   * The losers are read before the survivor: a merge folds the survivor before it retires a loser, so
   * a loser read before its retirement is folded here (twice folded is once), and one read after it is
   * gone only because the survivor read after that holds it already. On a single server, where a merge
   * is one call, the same holds.
   */
  async get(
    account: string,
    customerId: string,
    absorbed: readonly string[] = [],
  ): Promise<ProfileSnapshot | undefined> {
    // Every hash at once (one round trip on a single Redis: the client pipelines them).
    const [ownHash, ...losers] = await Promise.all(
      [customerId, ...absorbed].map((c) => this.redis.hGetAll(profileKeys.profile(account, c))),
    );
    const own = snapshotOf(customerId, ownHash!);
    if (absorbed.length === 0) return own;
    const unfolded = losers.flatMap((hash, i) => snapshotOf(absorbed[i]!, hash) ?? []);
    return foldedProfile(customerId, own, unfolded);
  }

  /**
   * Replaces the account's profiles with the store's. Every shard is closed first (its ready marker
   * removed: a batch resolved before the rebuild is refused rather than writing a partial profile), and
   * opened again only once all are loaded; a crash midway leaves them closed for the next rebuild.
   */
  async load(account: string, profiles: AsyncIterable<StoredProfile>): Promise<number> {
    await Promise.all(EVERY_SHARD.map((shard) => this.redis.del(profileKeys.ready(account, shard))));
    await this.forget(account);
    let count = 0;
    const rounds = new WriteRounds(LOAD_ROUND);
    for await (const p of profiles) {
      const prefix = profileKeys.prefixOf(account, p.svc_id);
      const fields: Record<string, string> = { [VERSION_FIELD]: String(p.version) };
      for (const [f, v] of Object.entries(p.attributes)) fields[f] = JSON.stringify(v);
      if (p.redacted) fields[REDACTED_FIELD] = '1';
      for (const [f, at] of Object.entries(p.times ?? {})) fields[TIME_PREFIX + f] = String(at);
      const { bucket, field } = entrySlot(p.svc_id);
      rounds.add(
        this.redis.hSet(under.profile(prefix, p.svc_id), fields),
        this.redis.hSet(under.list(prefix, bucket), field, ''),
        this.redis.sAdd(under.buckets(prefix), bucket),
      );
      if (typeof p.attributes.phone === 'string')
        rounds.add(this.redis.sAdd(under.phone(prefix, fields.phone!), p.svc_id));
      count++;
      await rounds.unitDone();
    }
    await rounds.flush();
    const now = new Date().toISOString();
    await Promise.all(EVERY_SHARD.map((shard) => this.redis.set(profileKeys.ready(account, shard), now)));
    return count;
  }

  /**
   * Deletes the account's profiles and phone index: those of the layouts before the sharding (under the
   * account's own prefix), then every shard's, the shards at once. A prefix's profile list names every
   * profile it holds (cdp_apply keeps it), and the phone keys are read from the profiles: no scan of a
   * keyspace that may hold many accounts.
   */
  private async forget(account: string): Promise<void> {
    const own = keys.prefix(account);
    await this.forgetUnder(own);
    for await (const members of this.connection.setMembers(legacyKeys.profiles(account)))
      await this.forgetProfiles(own, members);
    await this.redis.del(legacyKeys.profiles(account));
    await Promise.all(EVERY_SHARD.map((shard) => this.forgetUnder(accountShardPrefix(account, shard))));
  }

  /**
   * Deletes the profiles a prefix's list names, a thousand (or list buckets) a round trip. A list goes
   * only after every profile read from it: a crash in between leaves profiles a list still names, for the
   * next rebuild.
   */
  private async forgetUnder(prefix: string): Promise<void> {
    let customers: string[] = [];
    let lists: string[] = [];
    const flush = async (force = false) => {
      const listsDue = lists.length >= 1000 || (force && lists.length > 0);
      if (customers.length >= 1000 || ((force || listsDue) && customers.length)) {
        await this.forgetProfiles(prefix, customers);
        customers = [];
      }
      if (listsDue) {
        await this.redis.unlink(lists);
        lists = [];
      }
    };
    for await (const buckets of this.connection.setMembers(under.buckets(prefix))) {
      for (const bucket of buckets) {
        const list = under.list(prefix, bucket);
        for await (const entries of this.connection.hashEntries(list)) {
          customers.push(...entries.map((e) => customerOfSlot(bucket, e.field)));
          await flush();
        }
        lists.push(list);
        await flush();
      }
    }
    await flush(true);
    await this.redis.del(under.buckets(prefix));
  }

  private async forgetProfiles(prefix: string, customers: readonly string[]): Promise<void> {
    const profiles = customers.map((c) => under.profile(prefix, c));
    const phones = await Promise.all(profiles.map((key) => this.redis.hGet(key, 'phone')));
    const phoneKeys = phones.filter((p) => typeof p === 'string').map((p) => under.phone(prefix, p));
    await this.redis.unlink([...profiles, ...new Set(phoneKeys)]);
  }

  /** Every shard's phone set: one SUNION on a single server, one SMEMBERS per shard on a cluster. */
  async customersWithPhone(account: string, phone: string): Promise<string[]> {
    const json = JSON.stringify(phone);
    return (
      await membersOfSets(
        this.connection,
        EVERY_SHARD.map((s) => profileKeys.phone(account, s, json)),
      )
    ).sort();
  }

  /**
   * The opt-out pool is one set per account shard (hh of `<kind>:<value>`), so a big account's pool uses
   * every primary of a cluster; a batch asks or adds to every shard set it touches in one call on a single
   * server, and on a cluster once per shard, the shards at once (setsHold, addToSets).
   */
  async addToOptOutPool(account: string, ids: readonly Identifier[]): Promise<void> {
    if (ids.length === 0) return;
    await this.poolMoved.run(account);
    await addToSets(this.connection, poolSets(account, ids.map(poolMember)));
  }

  async inOptOutPool(account: string, ids: readonly Identifier[]): Promise<Identifier[]> {
    if (ids.length === 0) return [];
    await this.poolMoved.run(account);
    const sets = poolSets(account, ids.map(poolMember));
    const found = new Set<string>();
    for (const [key, answers] of await setsHold(this.connection, sets))
      sets.get(key)!.forEach((member, i) => answers[i] && found.add(member));
    return ids.filter((id) => found.has(poolMember(id)));
  }

  /**
   * Streams each shard's pool into a key of its own beside it, a chunk at a time, then puts each in place
   * with one RENAME: a reader sees a shard's old pool or its whole new one (the pool only grows between
   * rebuilds, so a mix of old and new shards misses nothing the old pool held), and the process holds at
   * most a chunk per shard.
   */
  async loadOptOutPool(account: string, ids: AsyncIterable<Identifier>): Promise<number> {
    const staging = (shard: number) => `${keys.optOutPool(account, shard)}:loading`;
    for (const shard of EVERY_SHARD) await this.redis.del(staging(shard));
    let count = 0;
    const chunks = new Map<number, string[]>();
    for await (const id of ids) {
      const member = poolMember(id);
      const shard = accountShard(member);
      const chunk = chunks.get(shard) ?? [];
      chunks.set(shard, chunk);
      chunk.push(member);
      count++;
      if (chunk.length === 1000) await this.redis.sAdd(staging(shard), chunk.splice(0));
    }
    await Promise.all(
      [...chunks]
        .filter(([, chunk]) => chunk.length > 0)
        .map(([shard, chunk]) => this.redis.sAdd(staging(shard), chunk)),
    );
    for (const shard of EVERY_SHARD) {
      if (chunks.has(shard)) await this.redis.rename(staging(shard), keys.optOutPool(account, shard));
      else await this.redis.del(keys.optOutPool(account, shard));
    }
    await this.redis.del(legacyKeys.optOutPool(account));
    this.poolMoved.markDone(account);
    return count;
  }

  /**
   * Moves the account's pool from its one set before the sharding (legacyKeys.optOutPool) to the shards,
   * once per process, before the process first adds to it or asks it: members are only ever added, so two
   * processes moving it at once both add the same members, and the old set goes only once all are moved.
   */
  private async movePoolFromLegacy(account: string): Promise<void> {
    const legacy = legacyKeys.optOutPool(account);
    if (!(await this.redis.exists(legacy))) return;
    for await (const members of this.connection.setMembers(legacy))
      await addToSets(this.connection, poolSets(account, members));
    await this.redis.del(legacy);
  }

  health(): Promise<DriverHealth> {
    return this.connection.health();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** A profile hash read back (HGETALL); undefined when the customer has none. */
function snapshotOf(customerId: string, hash: Record<string, string>): ProfileSnapshot | undefined {
  return hash[VERSION_FIELD] ? snapshot(customerId, Object.entries(hash).flat()) : undefined;
}

function snapshot(customerId: string, flat: string[]): ProfileSnapshot {
  const attributes: Attributes = {};
  let version = 0;
  let redacted = false;
  let times: FieldTimes | undefined;
  for (let i = 0; i < flat.length; i += 2) {
    const field = flat[i]!;
    if (field === VERSION_FIELD) version = Number(flat[i + 1]);
    else if (field === REDACTED_FIELD) redacted = true;
    else if (field.startsWith(TIME_PREFIX))
      (times ??= {})[field.slice(TIME_PREFIX.length)] = Number(flat[i + 1]);
    else attributes[field] = JSON.parse(flat[i + 1]!) as AttributeValue;
  }
  const snapshot: ProfileSnapshot = { customerId, version, attributes };
  if (redacted) snapshot.redacted = true;
  if (times) snapshot.times = times;
  return snapshot;
}
