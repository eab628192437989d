export * from './metadata-store.port.js';
export * from './file/file-metadata-store.adapter.js';
