import type { DriverHealth } from '@cdp/contracts';
import type { RedisCommands, RedisConnection } from '@cdp/redis';
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
  /** The customers that have a consent hash: readers and rebuilds find the keys from it, never by SCAN. */
  index: (account: string) => `cdp:{${account}}:consent-customers`,
};

/**
 * List memberships in Redis: one hash per customer (list id → 1 or 0) and a change counter. A batch
 * of changes is one MULTI: applied atomically, in order, each answered with the counter after it; the
 * same MULTI adds the customer to the account's index, so no hash exists unindexed.
 */
export class RedisConsentState extends ConsentState {
  private readonly redis: RedisCommands;
  constructor(private readonly connection: RedisConnection) {
    super();
    this.redis = connection.commands;
  }

  async apply(account: string, changes: ConsentChange[]): Promise<AppliedConsentChange[]> {
    if (changes.length === 0) return [];
    const multi = this.redis.multi();
    for (const c of changes) {
      const key = consentKeys.customer(account, c.customerId);
      multi.hIncrBy(key, VERSION_FIELD, 1);
      multi.hSet(key, c.listId, c.subscribed ? '1' : '0');
      multi.sAdd(consentKeys.index(account), c.customerId);
    }
    const replies = (await multi.exec()) as unknown[];
    return changes.map((c, i) => ({ ...c, version: Number(replies[i * 3]) }));
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

  async load(
    account: string,
    states: AsyncIterable<{ svc_id: string; list_id: string; subscribed: boolean; version: number }>,
  ): Promise<number> {
    const index = consentKeys.index(account);
    for await (const customers of this.connection.setMembers(index)) {
      const doomed = customers.map((c) => consentKeys.customer(account, c));
      await this.redis.multi().unlink(doomed).sRem(index, customers).exec();
    }
    let count = 0;
    const versions = new Map<string, number>();
    let pipeline = this.redis.multi();
    for await (const s of states) {
      const key = consentKeys.customer(account, s.svc_id);
      pipeline.hSet(key, s.list_id, s.subscribed ? '1' : '0');
      pipeline.sAdd(index, s.svc_id);
      versions.set(key, Math.max(versions.get(key) ?? 0, s.version));
      if (++count % 1000 === 0) {
        await pipeline.exec();
        pipeline = this.redis.multi();
      }
    }
    for (const [key, version] of versions) pipeline.hSet(key, VERSION_FIELD, String(version));
    await pipeline.exec();
    return count;
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
  for (const [field, value] of Object.entries(hash)) {
    if (field !== VERSION_FIELD) lists[field] = value === '1';
  }
  return { customerId, version: Number(hash[VERSION_FIELD]), lists };
}
