import type { DriverHealth } from '@cdp/contracts';
import {
  ACCOUNT_SHARDS,
  accountShard,
  accountShardPrefix,
  shardPrefixOf,
  ShardedHashes,
  type RedisConnection,
} from '@cdp/redis';
import {
  ConsentState,
  type AppliedConsentChange,
  type ConsentChange,
  type ConsentSnapshot,
  type StoredConsent,
} from '../consent-state.port.js';

const VERSION_FIELD = '__v';

/**
 * Applies changes in one atomic call, in order. A list's value is '1' or '0', followed by the \`at\` of
 * the change that set it when it had one: a change whose \`at\` is not newer is skipped (it counts no
 * version). Two keys per customer: its shard's index (KEYS[2c-1]) and its consent hash (KEYS[2c]).
 * ARGV[1] JSON [[customer number c, list, '1'|'0', at or ''], ...]; ARGV[2] JSON [customer id, ...] in
 * that order. Returns [[version after it, applied 1|0], ...].
 */
const APPLY = `
local out = {}
for i, c in ipairs(cjson.decode(ARGV[1])) do
  local key = KEYS[2 * c[1]]
  local at = tonumber(c[4])
  local last = nil
  if at then last = tonumber(string.sub(redis.call('HGET', key, c[2]) or '', 2)) end
  if last and last >= at then
    out[i] = {tonumber(redis.call('HGET', key, '__v')) or 0, 0}
  else
    out[i] = {redis.call('HINCRBY', key, '__v', 1), 1}
    redis.call('HSET', key, c[2], c[3] .. c[4])
  end
end
for c, customer in ipairs(cjson.decode(ARGV[2])) do redis.call('SADD', KEYS[2 * c - 1], customer) end
return out`;

/** A list's stored value: membership, then the \`at\` of the change that set it, if it had one. */
const stored = (subscribed: boolean, at: number | undefined) => (subscribed ? '1' : '0') + (at ?? '');

/** How many customers a rebuild writes per round of pipelined commands. */
const LOAD_ROUND = 500;

/**
 * Key layout: a customer's consent hash on its account shard (`{<account>#hh}`, hh the shard of the
 * customer id), beside that shard's index, so a big account's memberships use every primary of a
 * cluster (docs/architecture.md, "One account across the cluster"). No Redis call writes two customers'
 * memberships together with anything else of theirs (a merge reads each hash on its own), so the
 * customer is the unit.
 */
export const consentKeys = {
  customer: (account: string, customerId: string) =>
    `${shardPrefixOf(account, customerId)}consent:${customerId}`,
  /** The shard's customers that have a consent hash: readers and rebuilds find the keys from it, never by SCAN. */
  index: (account: string, shard: number) => `${accountShardPrefix(account, shard)}consent-customers`,
  /** The layout before the sharding: the account's own hash tag, one index (read only to move it). */
  legacyCustomer: (account: string, customerId: string) => `cdp:{${account}}:consent:${customerId}`,
  legacyIndex: (account: string) => `cdp:{${account}}:consent-customers`,
};

/**
 * List memberships in Redis: one hash per customer (list id → 1 or 0, and the \`at\` that set it) and a
 * change counter. A batch is one script call (APPLY) on a single server, and on a cluster one per shard
 * the batch touches: each applied atomically, in order, each change answered with the counter after it.
 * A customer's changes are all on its shard, so their order holds; a crash between two shards' calls
 * leaves the rest to the redelivery, whose changes carry the same \`at\` and are skipped where applied
 * (a change without one counts again, as any repeated batch did before). The same call adds the
 * customer to its shard's index, so no hash exists unindexed.
 *
 * An account's memberships written before the sharding (one hash tag, one index) are moved to the shards
 * the first time a process touches the account; the sharded call, the move and the rebuild's clearing
 * are ShardedHashes' (@cdp/redis), as for the identifier state.
 */
export class RedisConsentState extends ConsentState {
  private readonly hashes: ShardedHashes;
  constructor(connection: RedisConnection) {
    super();
    this.hashes = new ShardedHashes(connection, 'consent', 'consent-customers');
  }

  async apply(account: string, changes: ConsentChange[]): Promise<AppliedConsentChange[]> {
    const replies = await this.hashes.applyByShard<[number, number]>(
      account,
      APPLY,
      changes.map((c) => c.customerId),
      (indices) => {
        // Each customer's keys once per call, its changes pointing at them by number.
        const customers: string[] = [];
        const number = new Map<string, number>();
        const encoded = indices.map((i) => {
          const c = changes[i]!;
          let n = number.get(c.customerId);
          if (n === undefined) number.set(c.customerId, (n = customers.push(c.customerId)));
          return [n, c.listId, c.subscribed ? '1' : '0', c.at === undefined ? '' : String(c.at)];
        });
        return {
          keys: customers.flatMap((c) => [
            consentKeys.index(account, accountShard(c)),
            consentKeys.customer(account, c),
          ]),
          arguments: [JSON.stringify(encoded), JSON.stringify(customers)],
        };
      },
    );
    return replies.map(([version, applied], i) =>
      applied ? { ...changes[i]!, version } : { ...changes[i]!, version, stale: true },
    );
  }

  async get(account: string, customerId: string): Promise<ConsentSnapshot | undefined> {
    await this.hashes.ready(account);
    return snapshotOf(
      customerId,
      await this.hashes.commands.hGetAll(consentKeys.customer(account, customerId)),
    );
  }

  async *customers(account: string): AsyncIterable<ConsentSnapshot> {
    await this.hashes.ready(account);
    for (let shard = 0; shard < ACCOUNT_SHARDS; shard++)
      for await (const customers of this.hashes.connection.setMembers(consentKeys.index(account, shard))) {
        // One round trip per page of a shard's index: its customers' hashes (one slot) read together.
        const pipeline = this.hashes.commands.multi();
        for (const customer of customers) pipeline.hGetAll(consentKeys.customer(account, customer));
        const hashes = (await pipeline.execAsPipeline()) as unknown as Record<string, string>[];
        for (const [i, customer] of customers.entries()) {
          const snapshot = snapshotOf(customer, hashes[i] ?? {});
          if (snapshot) yield snapshot;
        }
      }
  }

  load(account: string, states: AsyncIterable<StoredConsent>): Promise<number> {
    // The store gives a customer's memberships together (ordered by customer): its version is known
    // once the next customer starts, so nothing is held per customer.
    return this.hashes.rebuild(account, LOAD_ROUND, async (rounds) => {
      let count = 0;
      let current: { customer: string; key: string; version: number } | undefined;
      const writeVersion = () => {
        if (current)
          rounds.add(this.hashes.commands.hSet(current.key, VERSION_FIELD, String(current.version)));
      };
      for await (const s of states) {
        count++;
        if (current?.customer !== s.svc_id) {
          writeVersion();
          current = { customer: s.svc_id, key: consentKeys.customer(account, s.svc_id), version: 0 };
          rounds.add(this.hashes.commands.sAdd(consentKeys.index(account, accountShard(s.svc_id)), s.svc_id));
          await rounds.unitDone();
        }
        current.version = Math.max(current.version, s.version);
        rounds.add(this.hashes.commands.hSet(current.key, s.list_id, stored(s.subscribed, s.at)));
      }
      writeVersion();
      return count;
    });
  }

  health(): Promise<DriverHealth> {
    return this.hashes.connection.health();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function snapshotOf(customerId: string, hash: Record<string, string>): ConsentSnapshot | undefined {
  if (!hash[VERSION_FIELD]) return undefined;
  const lists: Record<string, boolean> = {};
  const at: Record<string, number> = {};
  for (const [field, value] of Object.entries(hash)) {
    if (field === VERSION_FIELD) continue;
    lists[field] = value.startsWith('1');
    if (value.length > 1) at[field] = Number(value.slice(1));
  }
  return { customerId, version: Number(hash[VERSION_FIELD]), lists, at };
}
