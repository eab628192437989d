export * from './event-bus.port.js';
export * from './bus.transport.js';
export * from './retry-policy.js';
export * from './step-result.js';
