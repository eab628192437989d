export * from './buckets.port.js';
