export * from './consent-state.port.js';
