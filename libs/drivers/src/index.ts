export * from './drivers.module.js';
export { NATS_CONNECTION, REDIS_CLIENT } from './drivers.lifecycle.js';
