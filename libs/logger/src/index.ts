export * from './logger.js';
export * from './human-format.js';
export type { Logger } from 'pino';
export const LOGGER = Symbol('LOGGER');
