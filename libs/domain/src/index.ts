export * from './identifiers.js';
export * from './timestamps.js';
export * from './events.js';
export * from './profiles.js';
export * from './ids.js';
export * from './customer-fields.js';
export * from './custom-fields.js';
export * from './lists.js';
