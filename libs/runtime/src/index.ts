export * from './create-app.js';
export * from './run-main.js';
