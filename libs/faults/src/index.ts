export * from './faults.js';
