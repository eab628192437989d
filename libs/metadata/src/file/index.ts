export * from './file-metadata-store.adapter.js';
