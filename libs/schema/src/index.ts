export * from './schema.model.js';
export * from './builtin-objects.js';
export * from './naming.rules.js';
export * from './account-schema.js';
export * from './schema.validation.js';
export * from './schema.registry.js';
export * from './schema.module.js';
export * from './account-modules.js';
