export * from './memory-order-state.adapter.js';
