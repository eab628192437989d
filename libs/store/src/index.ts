export * from './analytic-store.port.js';
export * from './clickhouse-transport.js';
export * from './clickhouse.store.js';
export * from './tables/column.js';
export * from './tables/table.js';
export * from './tables/account-tables.js';
export * from './custom-columns.sql.js';
export * from './metered.transport.js';
export { withoutPersonalData } from './redaction.js';
