export * from './identity-index.port.js';
export * from './profile-state.port.js';
export * from './resolution.js';
