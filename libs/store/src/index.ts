export * from './analytic-store.port.js';
export * from './clickhouse-transport.js';
export * from './clickhouse.store.js';
export { databaseName } from './schema.sql.js';
export * from './custom-columns.sql.js';
export * from './metered.transport.js';
