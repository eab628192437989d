export * from './redis-order-state.adapter.js';
