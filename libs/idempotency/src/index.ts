export * from './idempotency-store.port.js';
export * from './idempotency-records.js';
