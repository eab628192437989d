export * from './redis-idempotency-store.adapter.js';
