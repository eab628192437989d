export * from './processor.module.js';
export * from './ingest.pipeline.js';
