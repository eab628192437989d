export * from './nats-recommender.adapter.js';
export { NatsPurchaseNotices } from './nats-purchase-notices.adapter.js';
