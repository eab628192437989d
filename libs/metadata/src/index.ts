export * from './metadata-store.port.js';
export * from './metadata-cache.js';
export * from './testing/outage-metadata-store.js';
export * from './leased-work.js';
export * from './newest-first-index.js';
export * from './cached-records.js';
