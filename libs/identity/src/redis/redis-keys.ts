/**
 * Key layout. Every key of an account carries `{<account>}` as its hash tag, so an account lives in
 * one cluster slot and a function may touch all of its keys.
 */
export const keys = {
  prefix: (account: string) => `cdp:{${account}}:`,
  identities: (account: string) => `cdp:{${account}}:ids`,
  ready: (account: string) => `cdp:{${account}}:ready`,
  rebuilding: (account: string) => `cdp:{${account}}:rebuilding`,
  born: (account: string) => `cdp:{${account}}:born`,
  customerIds: (account: string) => `cdp:{${account}}:cids`,
  merged: (account: string) => `cdp:{${account}}:merged`,
  mergeSeq: (account: string) => `cdp:{${account}}:mseq`,
  members: (account: string, customerId: string) => `cdp:{${account}}:m:${customerId}`,
  absorbed: (account: string, customerId: string) => `cdp:{${account}}:a:${customerId}`,
  unsettled: (account: string, message: string) => `cdp:{${account}}:done:${message}`,
  unsettledMessages: (account: string) => `cdp:{${account}}:unsettled`,
  /** The account's fixed graph keys; per-customer and per-message keys are found through `born` and `unsettled`. */
  graphKeys: (account: string) =>
    ['ids', 'born', 'cids', 'merged', 'mseq', 'unsettled'].map((k) => `cdp:{${account}}:${k}`),
  profile: (account: string, customerId: string) => `cdp:{${account}}:p:${customerId}`,
  /** A profile merged away, kept a while for a retried write (redis-functions.ts, cdp_apply). */
  mergedProfile: (account: string, customerId: string) => `cdp:{${account}}:pm:${customerId}`,
  /** The customers that have a profile hash: a rebuild finds the account's profile keys from it. */
  profiles: (account: string) => `cdp:{${account}}:profiles`,
  /** Customers whose profile's phone is exactly this value (its JSON text, as the profile hash holds it). */
  phone: (account: string, phoneJson: string) => `cdp:{${account}}:ph:${phoneJson}`,
  /** The opt-out pool: `<kind>:<value>` of every identifier opted out (spec "Compliance opt-out"). */
  optOutPool: (account: string) => `cdp:{${account}}:optout`,
};
