export * from './buckets.port.js';
export * from './local/local-dir-buckets.adapter.js';
