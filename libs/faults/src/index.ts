export * from './faults.js';
export * from './points.js';
