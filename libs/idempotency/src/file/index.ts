export * from './file-idempotency-store.adapter.js';
