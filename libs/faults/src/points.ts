/**
 * Every fault point of the processor's write path, in the order a batch crosses them: the one place
 * their names are written down. The crash-consistency suite (test/crash-consistency.e2e-spec.ts)
 * kills the process at each of them, and points.spec.ts fails when code calls `faultPoint` with a
 * name missing here, so a new boundary cannot go untested silently.
 */

/** Tables of the analytic store a batch appends to (ClickHouseStore), each behind `store.insert.<table>`. */
export const STORE_TABLES = [
  'identity_links',
  'identity_merges',
  'identity_conflicts',
  'customers',
  'order_changes',
  'events',
  'line_items',
  'orders',
  'products',
  'consent_history',
  'identifier_updates',
  'optout_pool',
  'optout_requests',
  /** Account objects (`obj_<name>` tables) share one point. */
  'objects',
  /** The commit marker: the last write of a message (see AnalyticStore.commit). */
  'ingest_commits',
] as const;

export const FAULT_POINTS = {
  /** Before the row that opens a batch's bracket of store writes (AnalyticStore.begin). */
  storeBegin: 'store.insert.ingest_commits.begin',
  /** Before the order state applies a batch's order changes (OrdersStep). */
  ordersApply: 'orders.apply',
  /** Before list memberships change (SubscriptionsStep). */
  consentApply: 'consent.apply',
  /** Before the hot profiles take a batch's updates (IdentityStep.applyProfiles). */
  profilesApply: 'profiles.apply',
  /** Before the identity index forgets a batch's remembered effects (IdentityStep.settle). */
  identitySettle: 'identity.settle',
  /** Before the bus acknowledges settled messages (local-log and NATS adapters). */
  busAck: 'bus.ack',
} as const;

/**
 * Points that are not crash boundaries of the write path, so the crash suite does not kill there: a
 * store that refuses writes a while, one account's poison, and the API's Idempotency-Key steps.
 */
export const OTHER_FAULT_POINTS = {
  /** Every insert of either store transport (`store.transport.insert:throw~60000`: the store away). */
  storeTransportInsert: 'store.transport.insert',
  /** Each account's messages before they are resolved (`processor.message[<account>]:reject`: poison). */
  processorMessage: 'processor.message',
  /** The API holds a request's Idempotency-Key, before it publishes. */
  idempotencyHeld: 'api.idempotency.held',
  /** The API published a request with an Idempotency-Key, before it records the answer. */
  idempotencyAnswer: 'api.idempotency.answer',
  /** The bulk-file loader, before it publishes one message of a file (a loader dying mid-file). */
  loaderPublish: 'loader.publish',
} as const;

/** The point before an insert into a store table. */
export function storeInsertPoint(table: (typeof STORE_TABLES)[number]): string {
  return `store.insert.${table}`;
}

/** Every point name, store inserts included. */
export function allFaultPoints(): string[] {
  return [...STORE_TABLES.map(storeInsertPoint), ...Object.values(FAULT_POINTS)];
}

/**
 * The boundaries of the sharded identity index's batch protocol (ShardedIdentityIndex), in the order a
 * batch crosses them. Not crash points of the default wiring: test/redis-sharded-identity.e2e-spec.ts
 * throws at each and checks that the redelivery (or another processor) ends in the same graph.
 */
export const SHARDED_IDENTITY_POINTS = {
  /** The intent is stored on the message's shard, before the account registers it as pending. */
  intentStored: 'identity.sharded.intent',
  /** The account lists the intent as pending (and its merge counter), before any graph write. */
  intentPending: 'identity.sharded.pending',
  /** After the losers' entries, before the survivors'. */
  losersWritten: 'identity.sharded.losers',
  /** After the survivors' entries, before the identifier entries. */
  survivorsWritten: 'identity.sharded.survivors',
  /** After the identifier entries, before the messages' markers. */
  idsWritten: 'identity.sharded.ids',
  /** After the markers, before the intent is dropped from the pending list. */
  markersWritten: 'identity.sharded.markers',
} as const;

/**
 * The boundary of a profile merge across shards on a cluster (RedisProfileState): the loser is folded into
 * its survivor, not yet retired on its own shard. test/redis-cluster-contracts.e2e-spec.ts throws there and
 * checks that the redelivery ends in the same profiles, and that a read meanwhile answers the whole merge.
 */
export const PROFILE_POINTS = {
  folded: 'profiles.sharded.folded',
} as const;
