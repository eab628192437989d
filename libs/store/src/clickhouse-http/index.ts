export * from './clickhouse-http.transport.js';
