import { graphRows, identityIndexContract, profileStateContract, record } from '../identity.contract.js';
import { IdentityNotWarmError } from '../identity-index.port.js';
import { accountShard, connectRedis, type RedisConnection } from '@cdp/redis';
import { RedisIdentityIndex } from './redis-identity-index.adapter.js';
import { RedisProfileState } from './redis-profile-state.adapter.js';
import { keys, legacyKeys, profileKeys } from './redis-keys.js';

const under = profileKeys.under;
import { customerOfSlot, decodeEntry } from './customer-entries.js';
import { identityKey } from '@cdp/domain';
import { identityProperties } from '../identity-properties.contract.js';
import { profileNameProperties } from '../profile-names.contract.js';
import { loadConfig } from '@cdp/config';
import { AccountGraph } from '../memory/account-graph.js';

/** Runs against the Redis of the machine (REDIS_URL or 127.0.0.1:6379); it must be up under CI. */
const url = loadConfig().redisUrl;
let redis: RedisConnection;

beforeAll(async () => {
  redis = await connectRedis(url);
});
/** Deletes every key of an account (a test's stand-in for FLUSHALL on a Redis shared by other tests). */
const FORGET_ACCOUNT = `
for _, pattern in ipairs(ARGV) do
  local cursor = '0'
  repeat
    local page = redis.call('SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = page[1]
    for _, key in ipairs(page[2]) do redis.call('UNLINK', key) end
  until cursor == '0'
end`;
async function forgetAccount(account: string): Promise<void> {
  await redis.commands.eval(FORGET_ACCOUNT, {
    keys: [keys.ready(account)],
    // The account's own tag and its shards' (`{<account>#hh}`).
    arguments: [`cdp:{${account}}:*`, `cdp:{${account}#*`],
  });
}

/** The property suite's accounts, deleted afterwards: a shared Redis outlives the run. */
const propertyAccounts: string[] = [];
afterAll(async () => {
  const index = new RedisIdentityIndex(redis);
  for (const account of propertyAccounts) {
    await index.load(account, graphRows([]));
    await redis.commands.del([keys.ready(account), keys.rebuilding(account)]);
  }
  await redis.close();
});

identityIndexContract('redis', async (accounts) => {
  const index = new RedisIdentityIndex(redis);
  for (const account of accounts) {
    await index.beginRebuild(account);
    await index.load(account, graphRows([]));
  }
  return index;
});

identityProperties(
  'redis',
  async (account) => {
    // A new account holds nothing, so there is nothing to rebuild: open it.
    propertyAccounts.push(account);
    await redis.commands.set(keys.ready(account), 'new');
    return new RedisIdentityIndex(redis);
  },
  1000,
);
// The contract's accounts have no identity index, so no ready marker: profiles alone.
profileStateContract('redis', () => Promise.resolve(new RedisProfileState(redis, { requireLoaded: false })));
profileNameProperties(
  'redis',
  () => Promise.resolve(new RedisProfileState(redis, { requireLoaded: false })),
  150,
);

describe('RedisIdentityIndex specifics', () => {
  const account = `rb${Math.random().toString(36).slice(2, 8)}`;
  const id = (value: string) => ({ kind: 'email', value });

  it('refuses to resolve an account it does not hold, rather than split its customers', async () => {
    const index = new RedisIdentityIndex(redis);
    await expect(index.resolve(`cold${account}`, [record([id('a@x.com')], 'c')])).rejects.toBeInstanceOf(
      IdentityNotWarmError,
    );
  });

  it('after losing its keys, a rebuild from the store rows gives the same resolutions as before', async () => {
    const index = new RedisIdentityIndex(redis);
    await index.beginRebuild(account);
    await index.load(account, graphRows([]));
    const records = Array.from({ length: 500 }, (_, i) =>
      record(
        [id(`p${i % 200}@x.com`), { kind: 'vuid', value: `v${i}` }, { kind: 'vuid', value: `w${i % 150}` }],
        `c${i}`,
      ),
    );
    const before = await index.resolve(account, records);
    expect(before.some((r) => r.merged.length > 0)).toBe(true);
    const links = before.flatMap((r) => r.linked.map((l) => ({ ...l, svc_id: r.customerId, born: r.born })));
    const merges = before.flatMap((r) =>
      r.merged.map((loser) => ({ loser, survivor: r.customerId, seq: r.mergeSeq })),
    );

    // What a FLUSHALL does to this account (the scaled e2e suite flushes a whole Redis of its own).
    await forgetAccount(account);
    await expect(index.resolve(account, [record([id('p1@x.com')], 'new')])).rejects.toBeInstanceOf(
      IdentityNotWarmError,
    );
    expect(await index.beginRebuild(account)).toBe(true);
    expect(await index.beginRebuild(account)).toBe(false); // one rebuild at a time, across processes
    expect(await index.load(account, graphRows(links, merges))).toBe(850);
    const after = await index.resolve(
      account,
      records.map((r) => ({ ...r, seed: 'never', message: 'again' })),
    );
    expect(after.map((r) => r.customerId)).toEqual(before.map((r) => final(r.customerId)));
    expect(after.every((r) => !r.created && r.linked.length === 0 && r.merged.length === 0)).toBe(true);

    function final(c: string): string {
      let survivor = c;
      for (const m of merges) if (m.loser === survivor) survivor = m.survivor;
      return survivor;
    }
  });

  it('a streamed rebuild (chunks of links, merges replayed in Redis) gives the graph the reference computes', async () => {
    const acc = `${account}s`;
    // Chains (a survivor later losing, a loser merged again), customer ids, more rows than one chunk.
    const links = Array.from({ length: 3000 }, (_, i) => ({
      kind: i % 7 === 0 ? 'customer_id' : i % 2 ? 'email' : 'vuid',
      value: `x${i}`,
      svc_id: `c${i % 1200}`,
      born: String(1000 + (i % 1200)),
    }));
    const merges = Array.from({ length: 1100 }, (_, i) => ({
      loser: `c${(i * 37) % 1200}`,
      survivor: `c${(i * 53 + 11) % 1200}`,
      seq: i + 1,
    }));
    const reference = await AccountGraph.fromRows(graphRows(links, merges));
    const index = new RedisIdentityIndex(redis);
    expect(await index.beginRebuild(acc)).toBe(true);
    expect(await index.load(acc, graphRows(links, merges))).toBe(3000);
    await index.endRebuild(acc);

    const hash = (key: string) => redis.commands.hGetAll(key);
    expect(await hash(keys.identities(acc))).toEqual(
      Object.fromEntries([...reference.owners].map(([k, c]) => [k, c])),
    );
    expect(await hash(keys.merged(acc))).toEqual(Object.fromEntries(reference.mergedInto));
    expect(await hash(keys.customerIds(acc))).toEqual(Object.fromEntries(reference.customerIds));
    const entries = await customerEntries(acc);
    expect(Object.fromEntries([...entries].map(([c, e]) => [c, e[0]]))).toEqual(
      Object.fromEntries(reference.born),
    );
    for (const [customer, members] of reference.members)
      expect(entries.get(customer)!.slice(1).sort()).toEqual(members.map(identityKey).sort());
    for (const [customer, losers] of [...reference.absorbed].slice(0, 50)) {
      expect(await index.absorbedBy(acc, customer)).toEqual([...losers].sort());
      expect((await index.identifiersOf(acc, customer)).length).toBe(reference.members.get(customer)!.length);
    }
    expect(await redis.commands.get(keys.mergeSeq(acc))).toBe('1100');
    await index.load(acc, graphRows([]));
    await redis.commands.del(keys.ready(acc));
  });

  it('keeps a running rebuild locked past the lock time, and frees the lock of one that failed', async () => {
    const acc = `${account}l`;
    const lockMs = 300;
    const index = new RedisIdentityIndex(redis, { rebuildLockMs: lockMs });
    const other = new RedisIdentityIndex(redis, { rebuildLockMs: lockMs });
    expect(await index.beginRebuild(acc)).toBe(true);
    const started = Date.now();
    while (Date.now() - started < lockMs * 4) {
      expect(await other.beginRebuild(acc)).toBe(false); // renewed: still held
      await new Promise((r) => setTimeout(r, 50));
    }
    // A rebuild that failed before loading: the lock is released, the account stays closed.
    await index.endRebuild(acc);
    expect(await redis.commands.exists(keys.rebuilding(acc))).toBe(0);
    await expect(index.resolve(acc, [record([id('l@x.com')], 'l')])).rejects.toBeInstanceOf(
      IdentityNotWarmError,
    );
    expect(await other.beginRebuild(acc)).toBe(true);
    await other.load(acc, graphRows([]));
    await other.endRebuild(acc);
    expect(await redis.commands.exists(keys.rebuilding(acc))).toBe(0);
    await redis.commands.del(keys.ready(acc));
  });

  it('applies no profile update to an account whose index is not loaded (flushed after the batch resolved)', async () => {
    const acc = `${account}p`;
    const index = new RedisIdentityIndex(redis);
    const profiles = new RedisProfileState(redis);
    await index.beginRebuild(acc);
    await profiles.load(acc, (async function* () {})());
    await index.load(acc, graphRows([]));
    await profiles.apply(acc, [{ customerId: 'c1', update: { email: 'c1@x.com', city: 'Oslo' } }]);
    // What a FLUSHALL leaves: nothing of the account, no ready marker.
    await forgetAccount(acc);
    await expect(
      profiles.apply(acc, [{ customerId: 'c1', update: { city: 'Rome' } }]),
    ).rejects.toBeInstanceOf(IdentityNotWarmError);
    expect(await profiles.get(acc, 'c1')).toBeUndefined(); // no partial profile {city: Rome}
  });

  it('a rebuild that lost its lock to a flush leaves the account closed, and the next rebuild opens it', async () => {
    const index = new RedisIdentityIndex(redis);
    const acc = `${account}f`;
    expect(await index.beginRebuild(acc)).toBe(true);
    // A FLUSHALL in the middle of the rebuild takes the lock (and whatever was loaded) with it.
    await redis.commands.del(keys.rebuilding(acc));
    await expect(index.load(acc, graphRows([]))).rejects.toBeInstanceOf(IdentityNotWarmError);
    await expect(index.resolve(acc, [record([id('f@x.com')], 'f')])).rejects.toBeInstanceOf(
      IdentityNotWarmError,
    );
    expect(await index.beginRebuild(acc)).toBe(true);
    expect(
      await index.load(acc, graphRows([{ kind: 'email', value: 'f@x.com', svc_id: 'cf', born: '1' }])),
    ).toBe(1);
    const [again] = await index.resolve(acc, [record([id('f@x.com')], 'g')]);
    expect(again!.customerId).toBe('cf');
    expect(await redis.commands.exists(keys.rebuilding(acc))).toBe(0);
    await index.load(acc, graphRows([]));
    await redis.commands.del(keys.ready(acc));
  });
});

/** Every customer entry of an account (born key, identity keys), read from its buckets. */
async function customerEntries(account: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const bucket of await redis.commands.sMembers(keys.entryBuckets(account)))
    for (const [field, entry] of Object.entries(await redis.commands.hGetAll(keys.entries(account, bucket))))
      out.set(customerOfSlot(bucket, field), decodeEntry(entry));
  return out;
}

describe('Redis customer entries (layout 2)', () => {
  const account = `ce${Math.random().toString(36).slice(2, 8)}`;
  const id = (value: string) => ({ kind: 'email', value });
  afterAll(async () => {
    await new RedisIdentityIndex(redis).load(account, graphRows([]));
    await redis.commands.del([keys.ready(account), keys.rebuilding(account)]);
  });

  it('stores generated customers in shared buckets, and identifiers with any character read back whole', async () => {
    const index = new RedisIdentityIndex(redis);
    await index.beginRebuild(account);
    await index.load(account, graphRows([]));
    const odd = ['a:b@x.com', '3:x\nnew\u0000line', 'ünï 😀:0:'].map((value) => ({ kind: 'vuid', value }));
    const resolved = await index.resolve(account, [
      record([odd[0]!, odd[1]!], 'one'),
      record([odd[2]!, { kind: 'email', value: 'two@x.com' }], 'two'),
    ]);
    const [one, two] = resolved.map((r) => r.customerId);
    expect(one).toMatch(/^c_[0-9a-f]{24}$/);
    expect(await index.identifiersOf(account, one!)).toEqual([odd[0], odd[1]]);
    expect(await index.identifiersOf(account, two!)).toEqual([odd[2], { kind: 'email', value: 'two@x.com' }]);
    const buckets = await redis.commands.sMembers(keys.entryBuckets(account));
    expect(buckets.sort()).toEqual([...new Set([one!.slice(2, 6), two!.slice(2, 6)])].sort());
    // A merge moves the loser's identifiers to the survivor; the loser keeps its born key alone.
    const [merged] = await index.resolve(account, [record([odd[0]!, odd[2]!], 'three')]);
    const survivor = merged!.customerId;
    const loser = survivor === one ? two! : one!;
    expect((await index.identifiersOf(account, survivor)).map((i) => i.value).sort()).toEqual(
      [...odd.map((i) => i.value), 'two@x.com'].sort(),
    );
    expect((await customerEntries(account)).get(loser)).toHaveLength(1);
  });

  it('lists the customers with a profile in buckets on their shard, and a reload removes every profile of any layout', async () => {
    const acc = `${account}pr`;
    const profiles = new RedisProfileState(redis, { requireLoaded: false });
    await profiles.apply(acc, [
      { customerId: 'c_abcd11', update: { email: 'a@x.com' } },
      { customerId: 'c_abcd22', update: { email: 'b@x.com' } },
      { customerId: 'other', update: { phone: '+4712345678' } },
    ]);
    await profiles.apply(acc, [{ customerId: 'c_abcd11', update: {}, absorb: ['c_abcd22'] }]);
    const shardOf = (c: string) => profileKeys.prefixOf(acc, c);
    expect(await redis.commands.hGetAll(under.list(shardOf('c_abcd11'), 'abcd'))).toEqual({ '11': '' });
    expect(await redis.commands.hGetAll(under.list(shardOf('c_abcd22'), 'abcd'))).toEqual({});
    expect(await redis.commands.sMembers(under.buckets(shardOf('other')))).toEqual(['_']);
    // A profile listed by layout 1 (a set), and one by layout 2 (buckets under the account's own prefix).
    const own = keys.prefix(acc);
    await redis.commands.hSet(under.profile(own, 'c_legacy'), { __v: '1', email: '"l@x.com"' });
    await redis.commands.sAdd(legacyKeys.profiles(acc), 'c_legacy');
    await redis.commands.hSet(under.profile(own, 'c_abcd33'), { __v: '1', phone: '"+4700"' });
    await redis.commands.hSet(under.list(own, 'abcd'), '33', '');
    await redis.commands.sAdd(under.buckets(own), 'abcd');
    await redis.commands.sAdd(under.phone(own, '"+4700"'), 'c_abcd33');

    async function* stored() {
      yield await Promise.resolve({ svc_id: 'c_beef01', version: 3, attributes: { city: 'Oslo' } });
    }
    expect(await profiles.load(acc, stored())).toBe(1);
    for (const c of ['c_abcd11', 'other']) expect(await profiles.get(acc, c)).toBeUndefined();
    expect(await profiles.customersWithPhone(acc, '+4712345678')).toEqual([]);
    expect((await profiles.get(acc, 'c_beef01'))?.attributes).toEqual({ city: 'Oslo' });
    expect(await redis.commands.sMembers(under.buckets(shardOf('c_beef01')))).toEqual(['beef']);
    for (const key of [
      under.list(shardOf('c_abcd11'), 'abcd'),
      under.buckets(shardOf('other')),
      legacyKeys.profiles(acc),
      under.profile(own, 'c_legacy'),
      under.profile(own, 'c_abcd33'),
      under.list(own, 'abcd'),
      under.buckets(own),
      under.phone(own, '"+4700"'),
    ])
      expect(await redis.commands.exists(key)).toBe(0);
    await profiles.load(acc, (async function* () {})());
  });

  it('refuses updates on a shard whose profiles are not loaded, until a load opens every shard', async () => {
    const acc = `${account}pready`;
    const profiles = new RedisProfileState(redis);
    await expect(profiles.apply(acc, [{ customerId: 'c1', update: { city: 'Oslo' } }])).rejects.toThrow(
      IdentityNotWarmError,
    );
    await profiles.load(acc, (async function* () {})());
    await profiles.apply(acc, [{ customerId: 'c1', update: { city: 'Oslo' } }]);
    // One shard lost (a primary failed over without its latest writes): its customers are refused.
    await redis.commands.del(profileKeys.ready(acc, accountShard('c2')));
    await expect(profiles.apply(acc, [{ customerId: 'c2', update: {} }])).rejects.toThrow(
      IdentityNotWarmError,
    );
    expect((await profiles.get(acc, 'c1'))?.attributes).toEqual({ city: 'Oslo' });
  });

  it('treats an account held in layout 1 as not loaded, and its rebuild removes the old keys', async () => {
    const acc = `${account}old`;
    await redis.commands.set(legacyKeys.ready(acc), 'v19');
    await redis.commands.hSet(legacyKeys.born(acc), 'c_old', '1');
    await redis.commands.sAdd(legacyKeys.members(acc, 'c_old'), 'email\u0000old@x.com');
    await redis.commands.hSet(keys.identities(acc), 'email\u0000old@x.com', 'c_old');
    const index = new RedisIdentityIndex(redis);
    await expect(index.resolve(acc, [record([id('old@x.com')], 'o')])).rejects.toBeInstanceOf(
      IdentityNotWarmError,
    );
    expect(await index.beginRebuild(acc)).toBe(true);
    await index.load(acc, graphRows([{ kind: 'email', value: 'old@x.com', svc_id: 'c_old', born: '1' }]));
    expect(
      await redis.commands.exists([
        legacyKeys.ready(acc),
        legacyKeys.born(acc),
        legacyKeys.members(acc, 'c_old'),
      ]),
    ).toBe(0);
    const [again] = await index.resolve(acc, [record([id('old@x.com')], 'o')]);
    expect(again!.customerId).toBe('c_old');
    expect(await index.identifiersOf(acc, 'c_old')).toEqual([id('old@x.com')]);
    await index.load(acc, graphRows([]));
    await redis.commands.del(keys.ready(acc));
  });
});

describe('the opt-out pool on the account shards', () => {
  it('moves a pool written before the sharding at first use, finds its members, and leaves no old set', async () => {
    const account = `pool${Math.random().toString(36).slice(2, 8)}`;
    await redis.commands.sAdd(legacyKeys.optOutPool(account), ['email:old@x.com', 'vuid:v1']);
    const profiles = new RedisProfileState(redis, { requireLoaded: false });
    const email = (value: string) => ({ kind: 'email', value });
    expect(
      await profiles.inOptOutPool(account, [
        email('old@x.com'),
        email('new@x.com'),
        { kind: 'vuid', value: 'v1' },
      ]),
    ).toEqual([email('old@x.com'), { kind: 'vuid', value: 'v1' }]);
    expect(await redis.commands.exists(legacyKeys.optOutPool(account))).toBe(0);
    // Its members are on their shards' sets, and a later addition joins them.
    await profiles.addToOptOutPool(account, [email('new@x.com')]);
    expect(
      await redis.commands.smIsMember(keys.optOutPool(account, accountShard('email:old@x.com')), [
        'email:old@x.com',
      ]),
    ).toEqual([1]);
    expect(
      await new RedisProfileState(redis, { requireLoaded: false }).inOptOutPool(account, [
        email('new@x.com'),
      ]),
    ).toEqual([email('new@x.com')]);
  });
});
