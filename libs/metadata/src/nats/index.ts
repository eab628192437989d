export * from './nats-kv-metadata-store.adapter.js';
