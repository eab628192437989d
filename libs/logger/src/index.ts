export * from './logger.js';
export type { Logger } from 'pino';
export const LOGGER = Symbol('LOGGER');
