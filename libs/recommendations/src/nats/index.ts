export * from './nats-recommender.adapter.js';
