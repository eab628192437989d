export * from './order-state.port.js';
export * from './memory/memory-order-state.adapter.js';
export * from './redis/redis-order-state.adapter.js';
