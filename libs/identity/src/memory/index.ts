export * from './memory-identity-index.adapter.js';
export * from './memory-profile-state.adapter.js';
export * from './account-graph.js';
export * from './compact-account-graph.js';
