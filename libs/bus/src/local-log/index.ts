export * from './local-log-event-bus.adapter.js';
