export * from './redis-identity-index.adapter.js';
export * from './redis-profile-state.adapter.js';
export { loadFunctions as loadIdentityFunctions } from './redis-functions-loader.js';
export * from './sharded-identity-index.adapter.js';
export { profileKeys } from './redis-keys.js';
