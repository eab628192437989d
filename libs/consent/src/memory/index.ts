export * from './memory-consent-state.adapter.js';
