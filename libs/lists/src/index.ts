export * from './lists.service.js';
