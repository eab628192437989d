import { createHash } from 'node:crypto';
import type { DriverHealth } from '@cdp/contracts';
import type { RedisCommands, RedisConnection } from '@cdp/redis';
import { IdempotencyStore } from '../idempotency-store.port.js';

/** Compare-and-set in one atomic call; the entry expires on Redis's own clock (PX), so nothing piles up. */
const COMPARE_AND_SET = `
local current = redis.call('GET', KEYS[1])
if (current or '') ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 1
`;

/**
 * Idempotency records in Redis, shared by every API replica, each with its own expiry (`PX`): the
 * engine the API already uses for short-lived per-account request state (rate-limit buckets). Keys
 * carry the account as hash tag and the client's key hashed (up to 255 characters of anything).
 */
export class RedisIdempotencyStore extends IdempotencyStore {
  private readonly redis: RedisCommands;
  constructor(
    private readonly connection: RedisConnection,
    private readonly clock: () => number = Date.now,
  ) {
    super();
    this.redis = connection.commands;
  }

  static key(account: string, key: string): string {
    return `cdp:{${account}}:idem:${createHash('sha256').update(key).digest('base64url')}`;
  }

  async get(account: string, key: string): Promise<string | undefined> {
    return (await this.redis.get(RedisIdempotencyStore.key(account, key))) ?? undefined;
  }

  async compareAndSet(
    account: string,
    key: string,
    expected: string | undefined,
    next: string | undefined,
    expiresAtMs: number,
  ): Promise<boolean> {
    // An empty string is never a record (records are JSON), so '' stands for "none" in the script.
    const ttl = Math.max(1, Math.ceil(expiresAtMs - this.clock()));
    const done = await this.redis.eval(COMPARE_AND_SET, {
      keys: [RedisIdempotencyStore.key(account, key)],
      arguments: [expected ?? '', next ?? '', String(ttl)],
    });
    return Number(done) === 1;
  }

  health(): Promise<DriverHealth> {
    return this.connection.health();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
