export * from './idempotency-store.port.js';
export * from './idempotency-records.js';
export * from './file/file-idempotency-store.adapter.js';
export * from './redis/redis-idempotency-store.adapter.js';
