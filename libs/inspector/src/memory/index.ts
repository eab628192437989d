export * from './memory-inspector.adapter.js';
