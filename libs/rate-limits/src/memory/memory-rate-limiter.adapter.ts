import type { DriverHealth } from '@cdp/contracts';
import { RateLimiter, type Allowance, type Take } from '../rate-limiter.port.js';
import { describeTake, idleTtlMs, takeToken, type BucketState } from '../token-bucket.js';

/** The embedded rate limiter: buckets in this process, which is the only API replica there is. */
export class MemoryRateLimiter extends RateLimiter {
  private readonly buckets = new Map<string, BucketState & { expiresAt: number }>();
  private taken = 0;

  constructor(private readonly clock: () => number = Date.now) {
    super();
  }

  take(account: string, family: string, allowance: Allowance): Promise<Take> {
    const now = this.clock();
    // Forget full buckets now and then, so idle accounts cost no memory.
    if (++this.taken % 10_000 === 0) {
      for (const [key, b] of this.buckets) if (b.expiresAt < now) this.buckets.delete(key);
    }
    const key = `${account}\u0000${family}`;
    const current = this.buckets.get(key);
    const fresh = current && current.expiresAt >= now ? current : undefined;
    const { state, allowed } = takeToken(fresh, now, allowance);
    this.buckets.set(key, { ...state, expiresAt: now + idleTtlMs(allowance) });
    return Promise.resolve(describeTake(allowed, state.milliTokens, allowance));
  }

  health(): Promise<DriverHealth> {
    return Promise.resolve({ driver: 'memory', ready: true });
  }

  close(): Promise<void> {
    this.buckets.clear();
    return Promise.resolve();
  }
}
