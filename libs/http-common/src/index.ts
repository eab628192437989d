export * from './auth.decorator.js';
export * from './error-envelope.filter.js';
export * from './engine-unavailable.js';
export * from './fastify-setup.js';
export * from './openapi.js';
export * from './request-hash.js';
