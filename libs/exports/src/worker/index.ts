/** The export worker's entry: the runner loads DuckDB, so only the roles that run exports import it. */
export * from '../export.runner.js';
export * from '../export.worker.js';
export * from '../export-worker.module.js';
