export * from './http-api.module.js';
export * from './fastify-setup.js';
export * from './openapi.js';
export * from './objects/objects.ingest.js';
export * from './rate-limits/rate-limit.decorator.js';
