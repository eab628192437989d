export * from './analytic-store.port.js';
export * from './clickhouse-transport.js';
export * from './clickhouse.store.js';
export * from './chdb/chdb.transport.js';
export * from './clickhouse-http/clickhouse-http.transport.js';
export { databaseName } from './schema.sql.js';
export * from './custom-columns.sql.js';
export * from './metered.transport.js';
