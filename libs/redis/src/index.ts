export * from './redis-connection.js';
export * from './rebuild-lock.js';
export * from './account-shards.js';
export * from './legacy-move.js';
export * from './sets-across-shards.js';
export * from './sharded-hashes.js';
