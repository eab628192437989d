export * from './config.js';
export const APP_CONFIG = Symbol('APP_CONFIG');
