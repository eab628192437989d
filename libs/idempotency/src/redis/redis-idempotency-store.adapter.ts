import { createHash } from 'node:crypto';
import type { DriverHealth } from '@cdp/contracts';
import { shardPrefixOf, type RedisCommands, type RedisConnection } from '@cdp/redis';
import { IdempotencyStore } from '../idempotency-store.port.js';

/**
 * Compare-and-set in one atomic call; the entry expires on Redis's own clock (PX), so nothing piles up.
 * ARGV: expected ('' none), next ('' delete), ttl ms, and 'legacy' when the caller found `expected` under
 * the key's pre-sharding name: then the record must still be absent here (the legacy value stands for
 * it), so that of two replicas taking the same legacy record over, one wins.
 * Returns 1 done, 0 not the expected value, 2 absent here while a value was expected (look at the legacy key).
 * Kept short: EVAL sends and hashes the body with every call.
 */
const COMPARE_AND_SET = `local c = redis.call('GET', KEYS[1])
if ARGV[4] == 'legacy' then if c then return 0 end
elseif not c and ARGV[1] ~= '' then return 2
elseif (c or '') ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
return 1`;

/**
 * Idempotency records in Redis, shared by every API replica, each with its own expiry (`PX`). A record
 * is keyed by one client key and never written together with another, so an account's records are
 * spread over its shards (`{<account>#hh}`, hh the shard of the client's key): a big account's records
 * use every primary of a cluster. The client's key is hashed in the name (up to 255 characters of anything).
 *
 * Records written before the sharding (`cdp:{<account>}:idem:…`) are still honoured: read as a fallback
 * when the sharded key is absent, and moved to it by the first compare-and-set over them. The fallback
 * can go once a whole CDP_IDEMPOTENCY_TTL_SECONDS window has passed on this release. A fresh take
 * (`expected` none) is checked against the sharded name only, sparing every new key a second look: the
 * rules (IdempotencyRecords.begin) take a key as fresh only after `get` found it under neither name.
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
    return `${shardPrefixOf(account, key)}idem:${hashed(key)}`;
  }

  /** The record's name before the account was sharded: the account's own hash tag. */
  static legacyKey(account: string, key: string): string {
    return `cdp:{${account}}:idem:${hashed(key)}`;
  }

  async get(account: string, key: string): Promise<string | undefined> {
    // Both asked at once: the fallback costs a GET, not a round trip.
    const [sharded, legacy] = await Promise.all([
      this.redis.get(RedisIdempotencyStore.key(account, key)),
      this.redis.get(RedisIdempotencyStore.legacyKey(account, key)),
    ]);
    return sharded ?? legacy ?? undefined;
  }

  async compareAndSet(
    account: string,
    key: string,
    expected: string | undefined,
    next: string | undefined,
    expiresAtMs: number,
  ): Promise<boolean> {
    // An empty string is never a record (records are JSON), so '' stands for "none" in the script.
    const ttl = String(Math.max(1, Math.ceil(expiresAtMs - this.clock())));
    const sharded = RedisIdempotencyStore.key(account, key);
    const cas = (mode: string) =>
      this.redis.eval(COMPARE_AND_SET, {
        keys: [sharded],
        arguments: [expected ?? '', next ?? '', ttl, mode],
      });
    const done = Number(await cas(''));
    if (done !== 2) return done === 1;
    // Absent under the sharded name: `expected` may be a record written before the sharding.
    const legacyKey = RedisIdempotencyStore.legacyKey(account, key);
    if ((await this.redis.get(legacyKey)) !== expected) return false;
    if (Number(await cas('legacy')) !== 1) return false;
    // Moved: the legacy record must not show through once the sharded one is deleted. A crash before
    // this leaves it shadowed (and a later read of it is at worst a resend marked as such).
    await this.redis.del(legacyKey);
    return true;
  }

  health(): Promise<DriverHealth> {
    return this.connection.health();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function hashed(key: string): string {
  return createHash('sha256').update(key).digest('base64url');
}
