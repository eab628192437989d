import {
  Inject,
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import type { Observable } from 'rxjs';
import { ApiError } from '@cdp/contracts';
import { LOGGER, type Logger } from '@cdp/logger';
import { Metrics } from '@cdp/metrics';
import { RateLimiter, RateLimitPolicy, type RateLimitFamily, type Take } from '@cdp/rate-limits';
import type { AuthedRequest } from '../auth/principal.js';
import { RATE_LIMIT_FAMILY } from './rate-limit.decorator.js';

/**
 * Takes a token from the account's bucket of the route's family before the route runs. Runs after
 * the auth guard (interceptors always do), so the account is known and an unauthenticated request
 * costs no token. Every answer of a limited route carries the RateLimit-* headers; beyond the limit
 * the answer is 429 with Retry-After (spec/NOTES.md "Limits").
 */
@Injectable()
export class RateLimitInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly policy: RateLimitPolicy,
    private readonly limiter: RateLimiter,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    if (context.getType() !== 'http') return next.handle();
    const family = this.reflector.getAllAndOverride<RateLimitFamily | undefined>(RATE_LIMIT_FAMILY, [
      context.getHandler(),
      context.getClass(),
    ]);
    const account = context.switchToHttp().getRequest<AuthedRequest>().principal?.account;
    if (!family || !account) return next.handle();
    const allowance = await this.policy.allowance(account, family);
    if (!allowance) return next.handle();
    let take: Take;
    try {
      take = await this.limiter.take(account, family, allowance);
    } catch (err) {
      // A limiter that cannot count (Redis away) lets requests through rather than fail them all.
      this.logger.warn({ err, account, family }, 'rate limiter unavailable; request not counted');
      return next.handle();
    }
    const headers = rateLimitHeaders(take);
    if (!take.allowed) {
      this.metrics.rateLimitRefusals.inc({ family });
      throw new ApiError(
        429,
        { message: `rate limit of the ${family} API exceeded (${take.limit} requests per second)` },
        { ...headers, 'retry-after': String(take.retryAfterSeconds) },
      );
    }
    void context.switchToHttp().getResponse<FastifyReply>().headers(headers);
    return next.handle();
  }
}

export function rateLimitHeaders(take: Take): Record<string, string> {
  return {
    'ratelimit-limit': String(take.limit),
    'ratelimit-remaining': String(take.remaining),
    'ratelimit-reset': String(take.resetSeconds),
  };
}
