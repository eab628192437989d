export * from './nats-event-bus.adapter.js';
export * from './jetstream-cluster.js';
