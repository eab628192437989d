export * from './auth.decorator.js';
export * from './error-envelope.filter.js';
export * from './engine-unavailable.js';
