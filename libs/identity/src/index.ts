export * from './identity-index.port.js';
export * from './profile-state.port.js';
export * from './memory/memory-identity-index.adapter.js';
export * from './memory/memory-profile-state.adapter.js';
export * from './redis/redis-connection.js';
export * from './redis/redis-identity-index.adapter.js';
export * from './redis/redis-profile-state.adapter.js';
