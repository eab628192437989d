export * from './redis-rate-limiter.adapter.js';
