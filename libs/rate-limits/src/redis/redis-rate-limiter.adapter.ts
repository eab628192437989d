import type { DriverHealth } from '@cdp/contracts';
import { shardPrefixOf, type RedisConnection, type RedisLibrary } from '@cdp/redis';
import { RateLimiter, type Allowance, type Take } from '../rate-limiter.port.js';
import { describeTake, idleTtlMs } from '../token-bucket.js';

const LIBRARY_NAME = 'cdp_rate';
const LIBRARY_VERSION = '2';

/**
 * The token bucket as a Redis Function (the same steps as `takeToken`): read, refill, take and write
 * in one atomic call, on the server's clock, so API replicas with drifting clocks share one bucket.
 */
const CODE = `#!lua name=${LIBRARY_NAME}
-- version ${LIBRARY_VERSION}

-- KEYS[1] the bucket hash. ARGV: rate (tokens/s), burst (tokens), idle ttl (ms), and optionally the
-- time in ms (a test's clock; without it the server's).
-- Returns {allowed 0|1, milli-tokens left}.
local function cdp_rate_take(keys, args)
  local rate = tonumber(args[1])
  local capacity = tonumber(args[2]) * 1000
  local now = tonumber(args[4])
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  local state = redis.call('HMGET', keys[1], 'm', 'at')
  local tokens = tonumber(state[1]) or capacity
  local at = tonumber(state[2]) or now
  if now > at then
    tokens = math.min(capacity, tokens + (now - at) * rate)
    at = now
  end
  local allowed = 0
  if tokens >= 1000 then
    tokens = tokens - 1000
    allowed = 1
  end
  redis.call('HSET', keys[1], 'm', string.format('%d', tokens), 'at', string.format('%d', at))
  redis.call('PEXPIRE', keys[1], args[3])
  return {allowed, tokens}
end

redis.register_function('cdp_rate_take', cdp_rate_take)
`;
const LIBRARY: RedisLibrary = { name: LIBRARY_NAME, code: CODE };

/**
 * Rate-limit buckets in Redis, shared by every API replica. A bucket is one key, never touched with
 * another, so it lives on its family's shard of the account (`{<account>#hh}`), not on the account's
 * one slot. Buckets of the unsharded layout (`cdp:{<account>}:rl:…`) are not read: a bucket holds
 * seconds of state, so after the upgrade each family starts from a full bucket once.
 */
export class RedisRateLimiter extends RateLimiter {
  /**
   * `now` (ms) replaces the server's clock, for tests that move time; replicas in service leave it
   * out so that they share the server's.
   */
  constructor(
    private readonly connection: RedisConnection,
    private readonly now?: () => number,
  ) {
    super();
  }

  static key(account: string, family: string): string {
    return `${shardPrefixOf(account, family)}rl:${family}`;
  }

  async take(account: string, family: string, allowance: Allowance): Promise<Take> {
    const args = [String(allowance.rate), String(allowance.burst), String(idleTtlMs(allowance))];
    if (this.now) args.push(String(Math.floor(this.now())));
    const keys = [RedisRateLimiter.key(account, family)];
    const reply: unknown = await this.connection.fcall(LIBRARY, 'cdp_rate_take', keys, args);
    const [allowed, milliTokens] = reply as [number, number];
    return describeTake(allowed === 1, Number(milliTokens), allowance);
  }

  health(): Promise<DriverHealth> {
    return this.connection.health();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
