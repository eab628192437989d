import type { ClickHouseTransport } from '../clickhouse-transport.js';

/**
 * Every table's engine and settings, and every column's type and default, in database `db`, as the
 * engine reports them, with the database's name written `DB`: what two ways of making the same tables
 * (hand-written statements of old, declarations now) must agree on, compared as text. Settings are
 * listed in name order: the engine lists a setting an `ALTER … MODIFY SETTING` added after those the
 * table was created with, and a table brought up to date must compare equal to one made new.
 */
export async function databaseShape(transport: ClickHouseTransport, db: string): Promise<string> {
  const tables = (
    await transport.query<{ name: string; engine_full: string }>(
      `SELECT name, engine_full FROM system.tables WHERE database = {db:String} ORDER BY name`,
      { db },
    )
  ).map(({ name, engine_full }) => ({ name, engine_full: settingsInNameOrder(engine_full) }));
  const columns = await transport.query(
    `SELECT table, position, name, type, default_expression FROM system.columns
     WHERE database = {db:String} ORDER BY table, position`,
    { db },
  );
  return JSON.stringify([...tables, ...columns]).replaceAll(db, 'DB');
}

function settingsInNameOrder(engine: string): string {
  const at = engine.indexOf(' SETTINGS ');
  if (at < 0) return engine;
  return `${engine.slice(0, at)} SETTINGS ${engine
    .slice(at + ' SETTINGS '.length)
    .split(', ')
    .sort()
    .join(', ')}`;
}
