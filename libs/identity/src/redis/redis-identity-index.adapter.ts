import { randomUUID } from 'node:crypto';
import type { DriverHealth } from '@cdp/contracts';
import { identityKey, type Identifier } from '@cdp/domain';
import { IdentityIndex, IdentityNotWarmError, type Resolution } from '../identity-index.port.js';
import { fcall, redisHealth, type RedisClient } from './redis-connection.js';
import { keys } from './redis-keys.js';

/** How long a rebuild may hold its lock before another process may take over. */
const REBUILD_LOCK_MS = 10 * 60 * 1000;

/**
 * The identity index in Redis: one hash per account (`identity key → customer id`) and a ready
 * marker. A batch is resolved by one function call, atomically. Everything here can be rebuilt from
 * the store; a missing marker (flushed or fresh Redis) makes `resolve` refuse until it is.
 */
export class RedisIdentityIndex extends IdentityIndex {
  readonly persistent = true;
  private readonly owner = randomUUID();

  constructor(private readonly redis: RedisClient) {
    super();
  }

  async resolve(account: string, records: Identifier[][], seeds: string[]): Promise<Resolution[]> {
    const input = { r: records.map((ids) => ids.map(identityKey)), s: seeds };
    let raw: string;
    try {
      raw = await fcall(
        this.redis,
        'cdp_resolve',
        [keys.identities(account), keys.ready(account)],
        [JSON.stringify(input)],
      );
    } catch (err) {
      if (/CDP_NOT_WARM/.test(String(err))) throw new IdentityNotWarmError(account);
      throw err;
    }
    const out = JSON.parse(raw) as [string, 0 | 1, number[] | Record<string, never>][];
    return out.map(([customerId, created, linked], i) => ({
      customerId,
      created: created === 1,
      // cjson encodes an empty array as {}.
      linked: Array.isArray(linked) ? linked.map((j) => records[i]![j]!) : [],
    }));
  }

  async lookup(account: string, id: Identifier): Promise<string | undefined> {
    return (await this.redis.hGet(keys.identities(account), identityKey(id))) ?? undefined;
  }

  async beginRebuild(account: string): Promise<boolean> {
    const locked = await this.redis.set(keys.rebuilding(account), this.owner, {
      condition: 'NX',
      expiration: { type: 'PX', value: REBUILD_LOCK_MS },
    });
    if (locked !== 'OK') return false;
    await this.redis.del(keys.ready(account));
    return true;
  }

  async load(
    account: string,
    links: AsyncIterable<{ kind: string; value: string; svc_id: string }>,
  ): Promise<number> {
    const hash = keys.identities(account);
    const staging = `${hash}:staging`;
    await this.redis.del(staging);
    let count = 0;
    let chunk: Record<string, string> = {};
    let size = 0;
    const flush = async () => {
      if (size) await this.redis.hSet(staging, chunk);
      chunk = {};
      size = 0;
    };
    for await (const link of links) {
      chunk[identityKey(link)] = link.svc_id;
      count++;
      if (++size === 5000) await flush();
    }
    await flush();
    // Swap in the rebuilt hash, then open the account again.
    const swap = this.redis.multi();
    if (count) swap.rename(staging, hash);
    else swap.del(hash);
    swap.set(keys.ready(account), new Date().toISOString());
    swap.del(keys.rebuilding(account));
    await swap.exec();
    return count;
  }

  health(): Promise<DriverHealth> {
    return redisHealth(this.redis);
  }

  close(): Promise<void> {
    return Promise.resolve(); // the connection belongs to the drivers module
  }
}
