/**
 * The console's store reads, light enough for the store's owner (the processor with chDB) to answer
 * them for the API over NATS without loading the console's controllers.
 */
export * from './console-store-reads.js';
