export * from './accounts.service.js';
export * from './accounts.module.js';
export * from './accounts.bootstrap.js';
export * from './keys.js';
