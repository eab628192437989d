import type { ClickHouseTransport } from '../clickhouse-transport.js';

/**
 * Every table's engine and settings, and every column's type and default, in database `db`, as the
 * engine reports them, with the database's name written `DB`: what two ways of making the same tables
 * (hand-written statements of old, declarations now) must agree on, compared as text.
 */
export async function databaseShape(transport: ClickHouseTransport, db: string): Promise<string> {
  const tables = await transport.query(
    `SELECT name, engine_full FROM system.tables WHERE database = {db:String} ORDER BY name`,
    { db },
  );
  const columns = await transport.query(
    `SELECT table, position, name, type, default_expression FROM system.columns
     WHERE database = {db:String} ORDER BY table, position`,
    { db },
  );
  return JSON.stringify([...tables, ...columns]).replaceAll(db, 'DB');
}
