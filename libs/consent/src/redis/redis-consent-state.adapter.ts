import type { DriverHealth } from '@cdp/contracts';
import { redisHealth, type RedisClient } from '@cdp/redis';
import {
  ConsentState,
  type AppliedConsentChange,
  type ConsentChange,
  type ConsentSnapshot,
} from '../consent-state.port.js';

const VERSION_FIELD = '__v';

/** Key layout: the account as hash tag (one cluster slot per account, as for identity and profiles). */
export const consentKeys = {
  customer: (account: string, customerId: string) => `cdp:{${account}}:consent:${customerId}`,
  pattern: (account: string) => `cdp:{${account}}:consent:*`,
};

/**
 * List memberships in Redis: one hash per customer (list id → 1 or 0) and a change counter. A batch
 * of changes is one MULTI: applied atomically, in order, each answered with the counter after it.
 */
export class RedisConsentState extends ConsentState {
  constructor(private readonly redis: RedisClient) {
    super();
  }

  async apply(account: string, changes: ConsentChange[]): Promise<AppliedConsentChange[]> {
    if (changes.length === 0) return [];
    const multi = this.redis.multi();
    for (const c of changes) {
      const key = consentKeys.customer(account, c.customerId);
      multi.hIncrBy(key, VERSION_FIELD, 1);
      multi.hSet(key, c.listId, c.subscribed ? '1' : '0');
    }
    const replies = (await multi.exec()) as unknown[];
    return changes.map((c, i) => ({ ...c, version: Number(replies[i * 2]) }));
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

  async load(
    account: string,
    states: AsyncIterable<{ svc_id: string; list_id: string; subscribed: boolean; version: number }>,
  ): Promise<number> {
    for await (const key of this.redis.scanIterator({ MATCH: consentKeys.pattern(account), COUNT: 1000 })) {
      const batch = Array.isArray(key) ? key : [key];
      if (batch.length) await this.redis.unlink(batch);
    }
    let count = 0;
    const versions = new Map<string, number>();
    let pipeline = this.redis.multi();
    for await (const s of states) {
      const key = consentKeys.customer(account, s.svc_id);
      pipeline.hSet(key, s.list_id, s.subscribed ? '1' : '0');
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
    if (field !== VERSION_FIELD) lists[field] = value === '1';
  }
  return { customerId, version: Number(hash[VERSION_FIELD]), lists };
}
