export * from './processor.module.js';
export * from './ingest.pipeline.js';
export * from './identity-rebuild.service.js';
export * from './custom-columns.service.js';
export * from './orders-rebuild.service.js';
