export * from './memory-rate-limiter.adapter.js';
