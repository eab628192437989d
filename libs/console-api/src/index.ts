export * from './console-api.module.js';
export * from './session-cookie.js';
export { CONSOLE_CSP } from './console-pages.js';
export { ConsoleSessions, SESSIONS_BUCKET, type SessionRecord } from './console-sessions.service.js';
