import { accountShardPrefix, shardPrefixOf } from '@cdp/redis';

/**
 * Key layout. Every key of an account carries `{<account>}` as its hash tag, so an account lives in
 * one cluster slot and a function may touch all of its keys.
 */
export const keys = {
  prefix: (account: string) => `cdp:{${account}}:`,
  identities: (account: string) => `cdp:{${account}}:ids`,
  /**
   * The account's ready marker. Its name carries the layout's version: an account Redis holds in an
   * older layout has none, so it is rebuilt from the store (and its old keys removed: legacy below).
   */
  ready: (account: string) => `cdp:{${account}}:ready:2`,
  rebuilding: (account: string) => `cdp:{${account}}:rebuilding`,
  /**
   * Customer entries (customer-entries.ts): bucket hashes `c:<bucket>`, field a customer's id (less its
   * bucket), value its born key and identity keys; `cb` the set of the account's buckets.
   */
  entries: (account: string, bucket: string) => `cdp:{${account}}:c:${bucket}`,
  entryBuckets: (account: string) => `cdp:{${account}}:cb`,
  customerIds: (account: string) => `cdp:{${account}}:cids`,
  merged: (account: string) => `cdp:{${account}}:merged`,
  mergeSeq: (account: string) => `cdp:{${account}}:mseq`,
  absorbed: (account: string, customerId: string) => `cdp:{${account}}:a:${customerId}`,
  unsettled: (account: string, message: string) => `cdp:{${account}}:done:${message}`,
  unsettledMessages: (account: string) => `cdp:{${account}}:unsettled`,
  /**
   * The account's fixed graph keys; buckets are found through `cb`, absorbed sets through `merged` (its
   * values are the survivors), per-message keys through `unsettled`.
   */
  graphKeys: (account: string) =>
    ['ids', 'cb', 'cids', 'merged', 'mseq', 'unsettled'].map((k) => `cdp:{${account}}:${k}`),
  /**
   * The opt-out pool, one set per account shard (not the account's tag): `<kind>:<value>` of every
   * identifier opted out (spec "Compliance opt-out") whose shard is `shard`.
   */
  optOutPool: (account: string, shard: number) => `${accountShardPrefix(account, shard)}optout`,
};

/**
 * Keys of layout 1 (function library up to v19), read only to remove them when an account is rebuilt
 * into the current layout: `born` (customer -> born key) named every customer, `m:<customer>` held its
 * identity keys, `profiles` listed the customers with a profile hash.
 */
export const legacyKeys = {
  ready: (account: string) => `cdp:{${account}}:ready`,
  born: (account: string) => `cdp:{${account}}:born`,
  members: (account: string, customerId: string) => `cdp:{${account}}:m:${customerId}`,
  /** The set of the customers with a profile hash. */
  profiles: (account: string) => `cdp:{${account}}:profiles`,
  /** The opt-out pool before it was sharded: one set in the account's tag (moved at first use). */
  optOutPool: (account: string) => `cdp:{${account}}:optout`,
};

/**
 * Hot profiles, each on the account shard of its customer (`{<account>#hh}`, hh of the customer id), so a
 * big account's profiles use every primary of a cluster (docs/architecture.md, "Profiles across the
 * shards"). Every key below is on the shard prefix `p` of its customer, so a call on one shard touches one
 * slot: `<p>p:<customer>` the profile hash; `<p>pm:<customer>` a profile merged away, kept a while for a
 * retried write (redis-functions.ts, cdp_apply); `<p>pr:<bucket>` and `<p>prb` the shard's list of the
 * customers with a profile (bucket hashes as the customer entries: field the id less its bucket, value
 * empty; and the set of those buckets), from which a rebuild finds them; `<p>ph:<phone JSON>` the shard's
 * customers whose profile's phone is exactly that value; `<p>pready` the shard's ready marker.
 * Before the sharding (layout 2) the same names sat under the account's own prefix `cdp:{<account>}:`:
 * a rebuild removes them (the missing shard ready markers force it).
 */
/** A profile's keys under a prefix (a shard's, or the account's own before the sharding). */
const profilesUnder = {
  profile: (prefix: string, customerId: string) => `${prefix}p:${customerId}`,
  merged: (prefix: string, customerId: string) => `${prefix}pm:${customerId}`,
  list: (prefix: string, bucket: string) => `${prefix}pr:${bucket}`,
  buckets: (prefix: string) => `${prefix}prb`,
  phone: (prefix: string, phoneJson: string) => `${prefix}ph:${phoneJson}`,
  ready: (prefix: string) => `${prefix}pready`,
};

export const profileKeys = {
  prefixOf: (account: string, customerId: string) => shardPrefixOf(account, customerId),
  profile: (account: string, customerId: string) =>
    profilesUnder.profile(shardPrefixOf(account, customerId), customerId),
  mergedProfile: (account: string, customerId: string) =>
    profilesUnder.merged(shardPrefixOf(account, customerId), customerId),
  ready: (account: string, shard: number) => profilesUnder.ready(accountShardPrefix(account, shard)),
  phone: (account: string, shard: number, phoneJson: string) =>
    profilesUnder.phone(accountShardPrefix(account, shard), phoneJson),
  under: profilesUnder,
};
