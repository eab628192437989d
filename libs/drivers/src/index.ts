export * from './drivers.module.js';
