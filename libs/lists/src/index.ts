export * from './lists.service.js';
export * from './unsubscribe-link.token.js';
export * from './unsubscribe-links.service.js';
export * from './lists.module.js';
export * from './list-memberships.js';
