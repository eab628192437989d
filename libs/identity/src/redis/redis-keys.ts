import { accountShardPrefix } from '@cdp/redis';

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
  profile: (account: string, customerId: string) => `cdp:{${account}}:p:${customerId}`,
  /** A profile merged away, kept a while for a retried write (redis-functions.ts, cdp_apply). */
  mergedProfile: (account: string, customerId: string) => `cdp:{${account}}:pm:${customerId}`,
  /**
   * The customers that have a profile hash, bucket hashes as the customer entries (field: the id less
   * its bucket; value empty), and the set of those buckets: a rebuild finds the account's profile keys
   * from them.
   */
  profileList: (account: string, bucket: string) => `cdp:{${account}}:pr:${bucket}`,
  profileBuckets: (account: string) => `cdp:{${account}}:prb`,
  /** Customers whose profile's phone is exactly this value (its JSON text, as the profile hash holds it). */
  phone: (account: string, phoneJson: string) => `cdp:{${account}}:ph:${phoneJson}`,
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
