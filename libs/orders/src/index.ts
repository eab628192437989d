export * from './order-state.port.js';
