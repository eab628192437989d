export * from './http-api.module.js';
export * from './rate-limits/rate-limit.decorator.js';
