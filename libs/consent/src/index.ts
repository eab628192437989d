export * from './consent-state.port.js';
export * from './memory/memory-consent-state.adapter.js';
export * from './redis/redis-consent-state.adapter.js';
