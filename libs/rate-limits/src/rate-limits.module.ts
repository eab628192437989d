import { Module } from '@nestjs/common';
import { RateLimitPolicy } from './rate-limit.policy.js';

/**
 * The accounts' rate-limit policy, provided once for the process: the API's interceptor, its admin
 * routes and the console read one cache. Its MetadataStore comes from the (global) drivers module.
 */
@Module({ providers: [RateLimitPolicy], exports: [RateLimitPolicy] })
export class RateLimitsModule {}
