export * from './metrics.js';
export * from './http-metrics.js';
export * from './exposition.js';
