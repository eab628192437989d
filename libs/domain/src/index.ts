export * from './identifiers.js';
export * from './timestamps.js';
export * from './events.js';
export * from './profiles.js';
export * from './ids.js';
export * from './orders.js';
export * from './products.js';
export * from './event-types.js';
