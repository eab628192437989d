import { createHash } from 'node:crypto';
import type { ClickHouseTransport } from './clickhouse-transport.js';

/**
 * Writing each message's rows once. Two guards: the engine drops an insert whose deduplication token
 * it remembers (a retry of the same insert), and a redelivered batch first leaves out the rows of
 * messages the table already holds (a batch stored before a crash but never acknowledged).
 */

/** The same rows give the same token, so the engine drops a repeated insert of them. */
export function dedupToken(table: string, rows: readonly { msg_id: string }[]): string {
  const ids = [...new Set(rows.map((r) => r.msg_id))].sort();
  return createHash('sha256').update(table).update('\u0000').update(ids.join('\u0000')).digest('hex');
}

/** The settings of every insert: its dedup token, and one block per insert, so it is atomic. */
export function onceSettings(
  table: string,
  rows: readonly { msg_id: string }[],
): Record<string, string | number> {
  return { insert_deduplication_token: dedupToken(table, rows), input_format_parallel_parsing: 0 };
}

/** The rows whose messages the table does not hold yet (`column` names the message id). */
export async function unstoredRows<R>(
  transport: ClickHouseTransport,
  table: string,
  rows: readonly R[],
  messageOf: (row: R) => string,
  column = 'msg_id',
): Promise<R[]> {
  if (rows.length === 0) return [];
  const ids = [...new Set(rows.map(messageOf))];
  const found = await transport.query<{ m: string }>(
    `SELECT DISTINCT ${column} AS m FROM ${table} WHERE ${column} IN {ids:Array(String)}`,
    { ids },
  );
  const present = new Set(found.map((r) => r.m));
  return rows.filter((r) => !present.has(messageOf(r)));
}
