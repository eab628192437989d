export * from './redis-connection.js';
export * from './rebuild-lock.js';
