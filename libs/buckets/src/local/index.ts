export * from './local-dir-buckets.adapter.js';
