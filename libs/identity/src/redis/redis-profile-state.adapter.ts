import type { DriverHealth } from '@cdp/contracts';
import type { Attributes, AttributeValue } from '@cdp/domain';
import { ProfileState, type ProfileSnapshot, type ProfileUpdate } from '../profile-state.port.js';
import { fcall, redisHealth, type RedisClient } from './redis-connection.js';
import { FN } from './redis-functions.js';
import { keys } from './redis-keys.js';

const VERSION_FIELD = '__v';

/**
 * Hot profiles in Redis: one hash per customer, each value JSON-encoded (so booleans stay booleans),
 * and a version counter. A batch of updates is applied by one function call, atomically.
 */
export class RedisProfileState extends ProfileState {
  constructor(private readonly redis: RedisClient) {
    super();
  }

  async apply(account: string, updates: ProfileUpdate[]): Promise<ProfileSnapshot[]> {
    if (updates.length === 0) return [];
    const customers: string[] = [];
    const index = new Map<string, number>();
    const slot = (customerId: string): number => {
      let i = index.get(customerId);
      if (i === undefined) {
        i = customers.push(customerId) - 1;
        index.set(customerId, i);
      }
      return i;
    };
    const encoded = updates.map(({ customerId, update, absorb = [] }) => {
      const fields: Record<string, string | null> = {};
      for (const [field, value] of Object.entries(update))
        fields[field] = value === null ? null : JSON.stringify(value);
      return [slot(customerId), fields, absorb.map(slot)];
    });
    const raw = await fcall(
      this.redis,
      FN.apply,
      customers.map((c) => keys.profile(account, c)),
      [JSON.stringify(encoded)],
    );
    return (JSON.parse(raw) as [number, string[] | object, number][]).map(([i, flat, survivor]) => {
      const snap = snapshot(customers[i]!, Array.isArray(flat) ? (flat as string[]) : []);
      if (survivor < 0) return snap;
      return { ...snap, version: snap.version + 1, mergedInto: customers[survivor]! };
    });
  }

  async get(account: string, customerId: string): Promise<ProfileSnapshot | undefined> {
    const hash = await this.redis.hGetAll(keys.profile(account, customerId));
    if (!hash[VERSION_FIELD]) return undefined;
    return snapshot(customerId, Object.entries(hash).flat());
  }

  async load(
    account: string,
    profiles: AsyncIterable<{ svc_id: string; version: number; attributes: Attributes }>,
  ): Promise<number> {
    for await (const key of this.redis.scanIterator({ MATCH: keys.profilePattern(account), COUNT: 1000 })) {
      const batch = Array.isArray(key) ? key : [key];
      if (batch.length) await this.redis.unlink(batch);
    }
    let count = 0;
    let pipeline = this.redis.multi();
    for await (const p of profiles) {
      const fields: Record<string, string> = { [VERSION_FIELD]: String(p.version) };
      for (const [f, v] of Object.entries(p.attributes)) fields[f] = JSON.stringify(v);
      pipeline.hSet(keys.profile(account, p.svc_id), fields);
      if (++count % 1000 === 0) {
        await pipeline.execAsPipeline();
        pipeline = this.redis.multi();
      }
    }
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

function snapshot(customerId: string, flat: string[]): ProfileSnapshot {
  const attributes: Attributes = {};
  let version = 0;
  for (let i = 0; i < flat.length; i += 2) {
    const field = flat[i]!;
    if (field === VERSION_FIELD) version = Number(flat[i + 1]);
    else attributes[field] = JSON.parse(flat[i + 1]!) as AttributeValue;
  }
  return { customerId, version, attributes };
}
