import type { DriverHealth } from '@cdp/contracts';
import type { RedisBatch, RedisCommands, RedisConnection } from '@cdp/redis';
import {
  ConsentState,
  type AppliedConsentChange,
  type ConsentChange,
  type ConsentSnapshot,
  type StoredConsent,
} from '../consent-state.port.js';

const VERSION_FIELD = '__v';

/**
 * Applies a batch of changes in one atomic call. A list's value is '1' or '0', followed by the \`at\` of
 * the change that set it when it had one: a change whose \`at\` is not newer is skipped (it counts no
 * version). KEYS: one consent hash per customer, then the account's index of customers. ARGV[1] JSON
 * [[key index, list, '1'|'0', at or ''], ...]; ARGV[2] JSON [customer id, ...] in KEYS' order.
 * Returns [[version after it, applied 1|0], ...].
 */
const APPLY = `
local out = {}
for i, c in ipairs(cjson.decode(ARGV[1])) do
  local key = KEYS[c[1] + 1]
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
local index = KEYS[#KEYS]
for _, customer in ipairs(cjson.decode(ARGV[2])) do redis.call('SADD', index, customer) end
return out`;

/** A list's stored value: membership, then the \`at\` of the change that set it, if it had one. */
const stored = (subscribed: boolean, at: number | undefined) => (subscribed ? '1' : '0') + (at ?? '');

/** Key layout: the account as hash tag (one cluster slot per account, as for identity and profiles). */
export const consentKeys = {
  customer: (account: string, customerId: string) => `cdp:{${account}}:consent:${customerId}`,
  /** The customers that have a consent hash: readers and rebuilds find the keys from it, never by SCAN. */
  index: (account: string) => `cdp:{${account}}:consent-customers`,
};

/**
 * List memberships in Redis: one hash per customer (list id → 1 or 0, and the \`at\` that set it) and a
 * change counter. A batch of changes is one script call: applied atomically, in order, each answered
 * with the counter after it; the same call adds the customer to the account's index, so no hash exists
 * unindexed.
 */
export class RedisConsentState extends ConsentState {
  private readonly redis: RedisCommands;
  constructor(private readonly connection: RedisConnection) {
    super();
    this.redis = connection.commands;
  }

  async apply(account: string, changes: ConsentChange[]): Promise<AppliedConsentChange[]> {
    if (changes.length === 0) return [];
    const customers: string[] = [];
    const slot = new Map<string, number>();
    const encoded = changes.map((c) => {
      let i = slot.get(c.customerId);
      if (i === undefined) slot.set(c.customerId, (i = customers.push(c.customerId) - 1));
      return [i, c.listId, c.subscribed ? '1' : '0', c.at === undefined ? '' : String(c.at)];
    });
    // EVAL, not a Functions library: the script is short, and a Redis restarted without persistence
    // needs nothing loaded again.
    const replies = (await this.redis.eval(APPLY, {
      keys: [...customers.map((c) => consentKeys.customer(account, c)), consentKeys.index(account)],
      arguments: [JSON.stringify(encoded), JSON.stringify(customers)],
    })) as [number, number][];
    return changes.map((c, i) => {
      const [version, applied] = replies[i]!;
      return applied ? { ...c, version } : { ...c, version, stale: true };
    });
  }

  async get(account: string, customerId: string): Promise<ConsentSnapshot | undefined> {
    return snapshotOf(customerId, await this.redis.hGetAll(consentKeys.customer(account, customerId)));
  }

  async *customers(account: string): AsyncIterable<ConsentSnapshot> {
    for await (const customers of this.connection.setMembers(consentKeys.index(account))) {
      // One round trip per page of the index: the hashes of its customers read together.
      const pipeline = this.redis.multi();
      for (const customer of customers) pipeline.hGetAll(consentKeys.customer(account, customer));
      const hashes = (await pipeline.execAsPipeline()) as unknown as Record<string, string>[];
      for (const [i, customer] of customers.entries()) {
        const snapshot = snapshotOf(customer, hashes[i] ?? {});
        if (snapshot) yield snapshot;
      }
    }
  }

  async load(account: string, states: AsyncIterable<StoredConsent>): Promise<number> {
    const index = consentKeys.index(account);
    await this.connection.clearIndexed(index, (c) => consentKeys.customer(account, c));
    // The store gives a customer's memberships together (ordered by customer): its version is known
    // once the next customer starts, so nothing is held per customer.
    let current: { key: string; version: number } | undefined;
    const writeVersion = (batch: RedisBatch) => {
      if (current) batch.hSet(current.key, VERSION_FIELD, String(current.version));
    };
    return this.connection.writeInBatches(
      states,
      (batch, s) => {
        const key = consentKeys.customer(account, s.svc_id);
        if (current?.key !== key) {
          writeVersion(batch);
          current = { key, version: 0 };
        }
        current.version = Math.max(current.version, s.version);
        batch.hSet(key, s.list_id, stored(s.subscribed, s.at));
        batch.sAdd(index, s.svc_id);
      },
      { finish: writeVersion },
    );
  }

  health(): Promise<DriverHealth> {
    return this.connection.health();
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
