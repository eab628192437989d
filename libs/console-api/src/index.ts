export * from './console-api.module.js';
export * from './session-cookie.js';
export { CONSOLE_CSP } from './console-pages.js';
