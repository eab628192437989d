export * from './nats-inspector.adapter.js';
