export * from './redis-consent-state.adapter.js';
