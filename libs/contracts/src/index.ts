export * from './errors.js';
export * from './messages.js';
export * from './schemas.js';
export * from './batch-validator.js';
export * from './commerce-schemas.js';
export * from './json-body.js';
export * from './exact-numbers.js';
