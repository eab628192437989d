export * from './consent-state.port.js';
export * from './identifier-state.port.js';
