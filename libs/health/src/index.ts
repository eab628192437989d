export * from './health.module.js';
export * from './health.controller.js';
export * from './metrics.controller.js';
