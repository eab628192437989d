export * from './identifiers.js';
export * from './timestamps.js';
export * from './events.js';
export * from './profiles.js';
export * from './ids.js';
export * from './lists.js';
