export * from './s3-buckets.adapter.js';
