export * from './redis-consent-state.adapter.js';
export * from './redis-identifier-state.adapter.js';
