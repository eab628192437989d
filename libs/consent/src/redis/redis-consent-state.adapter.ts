import type { DriverHealth } from '@cdp/contracts';
import { redisHealth, type RedisClient } from '@cdp/redis';
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
 * version). KEYS: one consent hash per customer. ARGV[1] JSON [[key index, list, '1'|'0', at or ''], ...].
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
return out`;

/** A list's stored value: membership, then the \`at\` of the change that set it, if it had one. */
const stored = (subscribed: boolean, at: number | undefined) => (subscribed ? '1' : '0') + (at ?? '');

/** Key layout: the account as hash tag (one cluster slot per account, as for identity and profiles). */
export const consentKeys = {
  customer: (account: string, customerId: string) => `cdp:{${account}}:consent:${customerId}`,
  pattern: (account: string) => `cdp:{${account}}:consent:*`,
};

/**
 * List memberships in Redis: one hash per customer (list id → 1 or 0, and the \`at\` that set it) and a
 * change counter. A batch of changes is one script call: applied atomically, in order, each answered
 * with the counter after it.
 */
export class RedisConsentState extends ConsentState {
  constructor(private readonly redis: RedisClient) {
    super();
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
    const replies = await this.redis.sendCommand<[number, number][]>([
      'EVAL',
      APPLY,
      String(customers.length),
      ...customers.map((c) => consentKeys.customer(account, c)),
      JSON.stringify(encoded),
    ]);
    return changes.map((c, i) => {
      const [version, applied] = replies[i]!;
      return applied ? { ...c, version } : { ...c, version, stale: true };
    });
  }

  async get(account: string, customerId: string): Promise<ConsentSnapshot | undefined> {
    return snapshotOf(customerId, await this.redis.hGetAll(consentKeys.customer(account, customerId)));
  }

  async *customers(account: string): AsyncIterable<ConsentSnapshot> {
    const prefix = consentKeys.customer(account, '');
    for await (const found of this.redis.scanIterator({ MATCH: consentKeys.pattern(account), COUNT: 1000 })) {
      const keys = Array.isArray(found) ? found : [found];
      if (keys.length === 0) continue;
      // One round trip per SCAN page: the hashes of its keys read together.
      const pipeline = this.redis.multi();
      for (const key of keys) pipeline.hGetAll(key);
      const hashes = (await pipeline.execAsPipeline()) as unknown as Record<string, string>[];
      for (const [i, key] of keys.entries()) {
        const snapshot = snapshotOf(key.slice(prefix.length), hashes[i] ?? {});
        if (snapshot) yield snapshot;
      }
    }
  }

  async load(account: string, states: AsyncIterable<StoredConsent>): Promise<number> {
    for await (const key of this.redis.scanIterator({ MATCH: consentKeys.pattern(account), COUNT: 1000 })) {
      const batch = Array.isArray(key) ? key : [key];
      if (batch.length) await this.redis.unlink(batch);
    }
    let count = 0;
    const versions = new Map<string, number>();
    let pipeline = this.redis.multi();
    for await (const s of states) {
      const key = consentKeys.customer(account, s.svc_id);
      pipeline.hSet(key, s.list_id, stored(s.subscribed, s.at));
      versions.set(key, Math.max(versions.get(key) ?? 0, s.version));
      if (++count % 1000 === 0) {
        await pipeline.execAsPipeline();
        pipeline = this.redis.multi();
      }
    }
    for (const [key, version] of versions) pipeline.hSet(key, VERSION_FIELD, String(version));
    await pipeline.execAsPipeline();
    return count;
  }

  health(): Promise<DriverHealth> {
    return redisHealth(this.redis);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function snapshotOf(customerId: string, hash: Record<string, string>): ConsentSnapshot | undefined {
  if (!hash[VERSION_FIELD]) return undefined;
  const lists: Record<string, boolean> = {};
  for (const [field, value] of Object.entries(hash)) {
    if (field !== VERSION_FIELD) lists[field] = value.startsWith('1');
  }
  return { customerId, version: Number(hash[VERSION_FIELD]), lists };
}
