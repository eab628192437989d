import type { DriverHealth } from '@cdp/contracts';
import type { AttributeValue, Attributes, Identifier } from '@cdp/domain';
import {
  ProfileState,
  type ProfileSnapshot,
  type ProfileUpdate,
  type StoredProfile,
} from '../profile-state.port.js';
import { IdentityNotWarmError } from '../identity-index.port.js';
import {
  accountShard,
  ACCOUNT_SHARDS,
  addToSets,
  groupBy,
  OncePerAccount,
  type RedisBatch,
  type RedisCommands,
  type RedisConnection,
  setsHold,
} from '@cdp/redis';
import { foldedProfile } from '../profile-fold.js';
import type { FieldTimes } from '../field-order.js';
import { fcall } from './redis-functions-loader.js';
import { FN } from './redis-functions.js';
import { keys, legacyKeys } from './redis-keys.js';
import { customerOfSlot, entrySlot } from './customer-entries.js';

const VERSION_FIELD = '__v';
/** Marks a redacted profile (cdp_apply). */
const REDACTED_FIELD = '__r';
/** `__t:<field>`: the acceptance order of the update that last wrote the field (cdp_apply). */
const TIME_PREFIX = '__t:';
const poolMember = (id: Identifier) => `${id.kind}:${id.value}`;

/** Pool members by the key of their account shard's set. */
const poolSets = (account: string, members: Iterable<string>) =>
  groupBy(members, (member) => keys.optOutPool(account, accountShard(member)));

/**
 * Hot profiles in Redis: one hash per customer, each value JSON-encoded (so booleans stay booleans),
 * and a version counter. A batch of updates is applied by one function call, atomically.
 */
export class RedisProfileState extends ProfileState {
  private readonly redis: RedisCommands;
  /** Accounts whose opt-out pool this process has checked for (and moved from) its one set before the sharding. */
  private readonly poolMoved = new OncePerAccount((account) => this.movePoolFromLegacy(account));
  constructor(
    private readonly connection: RedisConnection,
    /**
     * Refuse updates (IdentityNotWarmError) to an account the identity index does not hold as loaded:
     * after a flush, a batch resolved before it must not write partial profiles. Off only where
     * profiles are used without an identity index (the contract suite). `readyMarker`: the index's
     * ready marker, the single-tag driver's unless the sharded driver is the index (on the account's
     * tag either way, so the profiles' function may read it).
     */
    private readonly options: { requireLoaded: boolean; readyMarker?: (account: string) => string } = {
      requireLoaded: true,
    },
  ) {
    super();
    this.redis = connection.commands;
  }

  async apply(account: string, updates: ProfileUpdate[]): Promise<ProfileSnapshot[]> {
    if (updates.length === 0) return [];
    const customers: string[] = [];
    const index = new Map<string, number>();
    const slot = (customerId: string): number => {
      let i = index.get(customerId);
      if (i === undefined) {
        i = customers.push(customerId) - 1;
        index.set(customerId, i);
      }
      return i;
    };
    const encoded = updates.map(({ customerId, update, absorb = [], redact = false, at }) => {
      const fields: Record<string, string | null> = {};
      for (const [field, value] of Object.entries(update))
        fields[field] = value === null ? null : JSON.stringify(value);
      // `at` as decimal text: Lua numbers print with 14 digits, so Redis stores the exact text instead.
      const entry: unknown[] = [slot(customerId), fields, absorb.map(slot), redact ? 1 : 0];
      if (at !== undefined) entry.push(String(at));
      return entry;
    });
    let raw: string;
    try {
      raw = await fcall(
        this.connection,
        FN.apply,
        customers.map((c) => keys.profile(account, c)),
        [
          JSON.stringify(encoded),
          keys.prefix(account),
          JSON.stringify(customers),
          this.options.requireLoaded ? (this.options.readyMarker ?? keys.ready)(account) : '',
        ],
      );
    } catch (err) {
      if (/CDP_NOT_WARM/.test(String(err))) throw new IdentityNotWarmError(account);
      throw err;
    }
    return (JSON.parse(raw) as [number, string[] | object, number][]).map(([i, flat, survivor]) => {
      const snap = snapshot(customers[i]!, Array.isArray(flat) ? (flat as string[]) : []);
      if (survivor < 0) return snap;
      return { ...snap, version: snap.version + 1, mergedInto: customers[survivor]! };
    });
  }

  async get(
    account: string,
    customerId: string,
    absorbed: readonly string[] = [],
  ): Promise<ProfileSnapshot | undefined> {
    if (absorbed.length === 0)
      return snapshotOf(customerId, await this.redis.hGetAll(keys.profile(account, customerId)));
    // One transaction: cdp_apply folds a loser and renames it away atomically, so this sees either both
    // profiles unfolded or the fold done.
    const reads = this.redis.multi();
    for (const c of [customerId, ...absorbed]) reads.hGetAll(keys.profile(account, c));
    const [own, ...losers] = (await reads.exec()) as unknown as Record<string, string>[];
    const unfolded = losers.flatMap((hash, i) => snapshotOf(absorbed[i]!, hash) ?? []);
    return foldedProfile(customerId, snapshotOf(customerId, own!), unfolded);
  }

  async load(account: string, profiles: AsyncIterable<StoredProfile>): Promise<number> {
    await this.forget(account);
    const write = (batch: RedisBatch, p: StoredProfile) => {
      const fields: Record<string, string> = { [VERSION_FIELD]: String(p.version) };
      for (const [f, v] of Object.entries(p.attributes)) fields[f] = JSON.stringify(v);
      if (p.redacted) fields[REDACTED_FIELD] = '1';
      for (const [f, at] of Object.entries(p.times ?? {})) fields[TIME_PREFIX + f] = String(at);
      batch.hSet(keys.profile(account, p.svc_id), fields);
      const { bucket, field } = entrySlot(p.svc_id);
      batch.hSet(keys.profileList(account, bucket), field, '');
      batch.sAdd(keys.profileBuckets(account), bucket);
      if (typeof p.attributes.phone === 'string') batch.sAdd(keys.phone(account, fields.phone!), p.svc_id);
    };
    return this.connection.writeInBatches(profiles, write, { pipeline: true });
  }

  /**
   * Deletes the account's profiles and phone index. The account's profile list names every profile it
   * holds (cdp_apply keeps it), and the phone keys are read from the profiles: no scan of a keyspace
   * that may hold many accounts. A list of layout 1 (one set) is read and removed too.
   */
  private async forget(account: string): Promise<void> {
    let customers: string[] = [];
    let lists: string[] = [];
    /**
     * A thousand profiles (or list buckets) a round trip; `force` the rest. A list goes only after every
     * profile read from it: a crash in between leaves profiles a list still names, for the next rebuild.
     */
    const flush = async (force = false) => {
      const listsDue = lists.length >= 1000 || (force && lists.length > 0);
      if (customers.length >= 1000 || ((force || listsDue) && customers.length)) {
        await this.forgetProfiles(account, customers);
        customers = [];
      }
      if (listsDue) {
        await this.redis.unlink(lists);
        lists = [];
      }
    };
    for await (const buckets of this.connection.setMembers(keys.profileBuckets(account))) {
      for (const bucket of buckets) {
        const list = keys.profileList(account, bucket);
        for await (const entries of this.connection.hashEntries(list)) {
          customers.push(...entries.map((e) => customerOfSlot(bucket, e.field)));
          await flush();
        }
        lists.push(list);
        await flush();
      }
    }
    for await (const members of this.connection.setMembers(legacyKeys.profiles(account))) {
      customers.push(...members);
      await flush();
    }
    await flush(true);
    await this.redis.del([keys.profileBuckets(account), legacyKeys.profiles(account)]);
  }

  private async forgetProfiles(account: string, customers: readonly string[]): Promise<void> {
    const profiles = customers.map((c) => keys.profile(account, c));
    const reads = this.redis.multi();
    for (const key of profiles) reads.hGet(key, 'phone');
    const phones: unknown[] = await reads.execAsPipeline();
    const phoneKeys = phones.filter((p) => typeof p === 'string').map((p) => keys.phone(account, p));
    await this.redis.unlink([...profiles, ...new Set(phoneKeys)]);
  }

  async customersWithPhone(account: string, phone: string): Promise<string[]> {
    return (await this.redis.sMembers(keys.phone(account, JSON.stringify(phone)))).sort();
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
    for (let shard = 0; shard < ACCOUNT_SHARDS; shard++) await this.redis.del(staging(shard));
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
    for (let shard = 0; shard < ACCOUNT_SHARDS; shard++) {
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
