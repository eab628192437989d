export * from './http-api.module.js';
export * from './objects/objects.ingest.js';
export * from './rate-limits/rate-limit.decorator.js';
