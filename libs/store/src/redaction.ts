import type { ClickHouseTransport } from './clickhouse-transport.js';
import { sqlName } from './custom-columns.sql.js';
import { CUSTOMERS } from './tables/account-tables.js';
import { keptOnRedaction } from './tables/table.js';

/** What a redaction keeps of a profile snapshot (the declaration's kept columns); the rest is cleared. */
const KEPT = keptOnRedaction(CUSTOMERS);

/**
 * Removes the personal data of these customers, and of the customers merged into them, from every
 * profile snapshot of database `db` (spec "Compliance opt-out"); custom columns are cleared too.
 */
export async function redactCustomers(
  transport: ClickHouseTransport,
  db: string,
  customerIds: readonly string[],
): Promise<void> {
  const merged = await transport.query<{ svc_id: string }>(
    `SELECT svc_id FROM ${db}.customer_survivors WHERE survivor IN {ids:Array(String)}`,
    { ids: [...customerIds] },
  );
  const all = [...new Set([...customerIds, ...merged.map((m) => m.svc_id)])];
  const described = await transport.query<{ name: string }>(`DESCRIBE TABLE ${db}.${CUSTOMERS.name}`);
  const cleared = described.filter((c) => !KEPT.has(c.name)).map((c) => `${sqlName(c.name)} = NULL`);
  // A mutation rewrites the parts holding these rows; mutations_sync waits for it, so once this
  // returns no snapshot row (FINAL or not) holds their personal data.
  await transport.exec(
    `ALTER TABLE ${db}.${CUSTOMERS.name} UPDATE ${[...cleared, 'redacted = true'].join(', ')}
       WHERE svc_id IN (${all.map(sqlString).join(', ')}) SETTINGS mutations_sync = 2`,
  );
}

/** A string literal of ClickHouse SQL. */
function sqlString(value: string): string {
  return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}
