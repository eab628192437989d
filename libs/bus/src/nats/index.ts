export * from './nats-event-bus.adapter.js';
