import { SetMetadata } from '@nestjs/common';
import type { RateLimitFamily } from '@cdp/rate-limits';

export const RATE_LIMIT_FAMILY = 'cdp:rate-limit-family';

/**
 * Counts a route's requests against its account's bucket of one API family (spec "Limits"): e.g.
 * `@RateLimit('profiles')` on `/v3/profiles`, `@RateLimit('compliance')` on `/v3/optout`. A route
 * without it is never limited.
 */
export const RateLimit = (family: RateLimitFamily) => SetMetadata(RATE_LIMIT_FAMILY, family);
