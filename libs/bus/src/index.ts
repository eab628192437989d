export * from './event-bus.port.js';
export * from './local-log/local-log-event-bus.adapter.js';
export * from './nats/nats-event-bus.adapter.js';
export * from './bus.transport.js';
export * from './retry-policy.js';
