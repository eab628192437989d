export * from './rate-limiter.port.js';
export * from './token-bucket.js';
export * from './rate-limit.policy.js';
export * from './memory/memory-rate-limiter.adapter.js';
export * from './redis/redis-rate-limiter.adapter.js';
