export * from './metadata-store.port.js';
export * from './file/file-metadata-store.adapter.js';
export * from './nats/nats-kv-metadata-store.adapter.js';
export * from './metadata-cache.js';
export * from './testing/outage-metadata-store.js';
