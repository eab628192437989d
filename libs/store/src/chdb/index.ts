export * from './chdb.transport.js';
