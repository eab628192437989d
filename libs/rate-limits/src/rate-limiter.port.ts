import type { DriverHealth } from '@cdp/contracts';

/** A token bucket's size and refill: `rate` tokens per second, at most `burst` saved up. */
export interface Allowance {
  rate: number;
  burst: number;
}

/** The outcome of one request against its bucket, with what the RateLimit-* headers report. */
export interface Take {
  allowed: boolean;
  limit: number;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Seconds (rounded up) until the bucket is full again. */
  resetSeconds: number;
  /** Seconds (rounded up, at least 1) until the next request would be allowed; 0 when allowed. */
  retryAfterSeconds: number;
}

/**
 * Token buckets per account and API family (spec "Limits"), shared by every API replica. A bucket
 * starts full; each request takes one token; tokens come back continuously at `rate` per second.
 */
export abstract class RateLimiter {
  abstract take(account: string, family: string, allowance: Allowance): Promise<Take>;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
