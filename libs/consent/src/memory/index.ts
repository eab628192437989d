export * from './memory-consent-state.adapter.js';
export * from './memory-identifier-state.adapter.js';
