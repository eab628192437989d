export * from './rate-limiter.port.js';
export * from './token-bucket.js';
export * from './rate-limit.policy.js';
export * from './rate-limits.module.js';
