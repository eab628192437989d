import type { Allowance, Take } from './rate-limiter.port.js';

/**
 * Bucket state in thousandths of a token, so the Redis script and this code do the same integer
 * arithmetic: a request costs 1000, and every millisecond gives back `rate` (tokens per second).
 */
export interface BucketState {
  milliTokens: number;
  atMs: number;
}

export const TOKEN = 1000;

/** One request against a bucket at `nowMs`; the same steps as `cdp_rate_take` in the Redis library. */
export function takeToken(
  state: BucketState | undefined,
  nowMs: number,
  allowance: Allowance,
): { state: BucketState; allowed: boolean } {
  const capacity = allowance.burst * TOKEN;
  let milliTokens = state?.milliTokens ?? capacity;
  let atMs = state?.atMs ?? nowMs;
  if (nowMs > atMs) {
    milliTokens = Math.min(capacity, milliTokens + (nowMs - atMs) * allowance.rate);
    atMs = nowMs;
  }
  const allowed = milliTokens >= TOKEN;
  if (allowed) milliTokens -= TOKEN;
  return { state: { milliTokens, atMs }, allowed };
}

/** What the headers say about a bucket left with `milliTokens`. */
export function describeTake(allowed: boolean, milliTokens: number, allowance: Allowance): Take {
  const capacity = allowance.burst * TOKEN;
  // rate tokens/s = rate milli-tokens per millisecond.
  const msUntil = (target: number) => Math.max(0, target - milliTokens) / allowance.rate;
  return {
    allowed,
    limit: allowance.burst,
    remaining: Math.floor(milliTokens / TOKEN),
    resetSeconds: Math.ceil(msUntil(capacity) / 1000),
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil(msUntil(TOKEN) / 1000)),
  };
}

/** How long an idle bucket must be kept: until it would be full again anyway. */
export function idleTtlMs(allowance: Allowance): number {
  return Math.ceil((allowance.burst * TOKEN) / allowance.rate) + 1000;
}
