import type { CurrentProfile } from './analytic-store.port.js';
import type { ClickHouseTransport } from './clickhouse-transport.js';
import { sqlName } from './custom-columns.sql.js';
import {
  CONSENT_HISTORY,
  CUSTOMERS,
  IDENTIFIER_UPDATES,
  IDENTITY_LINKS,
  IDENTITY_MERGES,
  INGEST_COMMITS,
  OPTOUT_POOL,
  ORDER_CHANGES,
  ORDERS,
} from './tables/account-tables.js';
import { CO_SHARDED_SETTING, coShardedIn } from './tables/distributed-reads.js';
import { declaredColumnNames, storeColumns, type RowOf } from './tables/table.js';

/**
 * What the hot state is rebuilt from, streamed: each read leaves out the rows of unfinished messages
 * (see AnalyticStore.begin), passed in as `unfinished`.
 */
const COUNTED = 'WHERE msg_id NOT IN {unfinished:Array(String)}';

/** One rebuild read's inputs: where it reads, which messages it leaves out, how many rows a slice holds. */
export interface RebuildRead {
  transport: ClickHouseTransport;
  db: string;
  unfinished: readonly string[];
  /** About how many rows one slice of a read holds (StoreOptions.rebuildSliceRows). */
  sliceRows: number;
}

/**
 * The default of StoreOptions.rebuildSliceRows. Smaller slices cost a scan each but hold less: at 1M
 * customers (2M links) a rebuild peaked at 896 MB unsliced, 747 MB in slices of 250,000 and 613 MB in
 * slices of 50,000, and was faster too (docs/benchmarks.md).
 */
export const REBUILD_SLICE_ROWS = 50_000;

/**
 * A rebuild reads a whole account, and its GROUP BY and ORDER BY would hold all of it in the engine's
 * memory (in-process with chDB: the processor's): past these sizes they spill to disk instead, so a
 * rebuild's memory does not grow with the account. One thread: a rebuild is a background task.
 */
const BOUNDED = `SETTINGS max_bytes_before_external_group_by = ${128 << 20}, max_bytes_before_external_sort = ${128 << 20}, max_threads = 1`;

/**
 * Reads too are split, into slices: a slice is the rows whose key's CRC32 is `slice_index` modulo
 * `slice_count`, so each read's result (which the in-process engine holds until it is streamed out) and
 * its sort stay the size of a slice, and one key's rows (an identifier's links, a customer's snapshots)
 * are always in one slice, which is therefore a complete answer for its keys. The count is a power of
 * two up to 256, so a slice holds whole account shards (`accountShard`, `@cdp/redis`, is CRC32 modulo
 * 256): a rebuild of one shard could read its own slices.
 */
const MAX_SLICES = 256;

const inSlice = (key: string) => `CRC32(${key}) % {slice_count:UInt32} = {slice_index:UInt32}`;

/** How many slices `rows` rows are read in: the least power of two, up to 256, that keeps each near `sliceRows`. */
export function sliceCount(rows: number, sliceRows: number): number {
  let count = 1;
  while (count < MAX_SLICES && rows > count * sliceRows) count *= 2;
  return count;
}

/**
 * Streams `sql` slice by slice (its WHERE holds `inSlice(key)`), the count from the rows `sizeSql` counts.
 * Within a slice the rows come in the query's order; across slices, slice by slice.
 */
async function* sliced<T>(
  read: RebuildRead,
  sizeSql: string,
  sql: string,
  params: Record<string, unknown> = {},
): AsyncIterable<T> {
  const [size] = await read.transport.query<{ rows: string | number }>(sizeSql, {
    unfinished: read.unfinished,
    ...params,
  });
  const count = sliceCount(Number(size?.rows ?? 0), read.sliceRows);
  for (let index = 0; index < count; index++)
    yield* read.transport.stream<T>(sql, {
      unfinished: read.unfinished,
      ...params,
      slice_count: count,
      slice_index: index,
    });
}

/**
 * Each identifier with its first owner; in link order within a slice (the index's result does not depend
 * on link order: docs/architecture.md, "Rebuilds in bounded memory").
 * Rows of no identifier (kind '') are lowered born keys (`identityBorns`).
 */
export function identityLinks(
  read: RebuildRead,
): AsyncIterable<{ kind: string; value: string; svc_id: string; born: string }> {
  const links = `${read.db}.${IDENTITY_LINKS.name}`;
  return sliced(
    read,
    `SELECT count() AS rows FROM ${links} WHERE kind != ''`,
    `SELECT kind, value, argMin(svc_id, (created_at, msg_id)) AS svc_id, argMin(born, (created_at, msg_id)) AS born
       FROM ${links} ${COUNTED} AND kind != '' AND ${inSlice(`concat(kind, ':', value)`)}
       GROUP BY kind, value ORDER BY min(created_at), kind, value ${BOUNDED}`,
  );
}

/** Each customer whose born key a record lowered without a link, with the least key so given. */
export function identityBorns(read: RebuildRead): AsyncIterable<{ svc_id: string; born: string }> {
  const links = `${read.db}.${IDENTITY_LINKS.name}`;
  return sliced(
    read,
    `SELECT count() AS rows FROM ${links} WHERE kind = ''`,
    `SELECT svc_id, min(born) AS born FROM ${links} ${COUNTED} AND kind = '' AND ${inSlice('svc_id')}
       GROUP BY svc_id ${BOUNDED}`,
  );
}

/**
 * The merges in the order they happened (seq, then loser), a page of `sliceRows` at a time: each page
 * starts after the last row of the one before (seq values may repeat, so the page key is the whole row),
 * and its ORDER BY … LIMIT keeps only a page in the engine.
 */
export async function* identityMerges(
  read: RebuildRead,
): AsyncIterable<{ loser: string; survivor: string; seq: number }> {
  let after: { seq: number; loser: string; survivor: string } | undefined;
  for (;;) {
    const page = await read.transport.query<{ loser: string; survivor: string; seq: number | string }>(
      `SELECT DISTINCT loser, survivor, seq FROM ${read.db}.${IDENTITY_MERGES.name} ${COUNTED}
         ${after ? 'AND (seq, loser, survivor) > ({seq:UInt64}, {loser:String}, {survivor:String})' : ''}
         ORDER BY seq, loser, survivor LIMIT {page:UInt32} ${BOUNDED}`,
      { unfinished: read.unfinished, page: read.sliceRows, ...after },
    );
    for (const m of page) yield { loser: m.loser, survivor: m.survivor, seq: Number(m.seq) };
    if (page.length < read.sliceRows) return;
    const last = page[page.length - 1]!;
    after = { seq: Number(last.seq), loser: last.loser, survivor: last.survivor };
  }
}

/** The customers' declared columns: the built-in ones; every other column holds a custom field. */
const CUSTOMER_COLUMNS = new Set(declaredColumnNames(CUSTOMERS));
/** The profile attributes among them (customer fields). */
const ATTRIBUTE_COLUMNS = storeColumns(CUSTOMERS)
  .filter((c) => c.group === 'attributes')
  .map((c) => c.name);

export async function* currentProfiles(read: RebuildRead): AsyncIterable<CurrentProfile> {
  const { transport, db } = read;
  const table = `${db}.${CUSTOMERS.name}`;
  // Custom fields are columns added after the built-in ones; custom timestamps go back to unix seconds.
  const described = await transport.query<{ name: string; type: string }>(`DESCRIBE TABLE ${table}`);
  const custom = described.filter((c) => !CUSTOMER_COLUMNS.has(c.name));
  const customSql = custom.map((c) =>
    c.type.includes('DateTime64')
      ? `toUnixTimestamp64Milli(${sqlName(c.name)}) / 1000 AS ${c.name}`
      : sqlName(c.name),
  );
  const columns = [...ATTRIBUTE_COLUMNS, ...custom.map((c) => c.name)];
  // Each customer's latest snapshot (what FINAL keeps), if it is not merged away. Snapshots of
  // unfinished messages cannot simply be left out here: the table is a ReplacingMergeTree, and a
  // background merge may at any time fold a customer's older, counted snapshots into the newest one,
  // which may be an unfinished message's (leaving it out would lose the customer, or bring back a
  // stale snapshot). Such a snapshot is the finished state plus that message's own changes, which its
  // redelivery applies again to the same result (attribute updates and merges are idempotent). So:
  // - a counted latest snapshot counts as stored;
  // - an unfinished latest snapshot counts for a customer the finished messages know (a counted
  //   link), as live (a merge it records is unfinished: the redelivery makes it again); one of a
  //   customer only unfinished messages know is left out, as the index leaves that customer out.
  // A customer's snapshots are all in one slice (by svc_id), so each slice's LIMIT 1 BY is exact.
  const rows = sliced<Record<string, string | boolean | number | null>>(
    read,
    `SELECT count() AS rows FROM ${table}`,
    `SELECT * FROM (
         SELECT ${['svc_id', 'version', 'redacted', 'merged_into', 'field_at', ...ATTRIBUTE_COLUMNS, ...customSql].join(', ')},
                msg_id IN {unfinished:Array(String)} AS unfinished_snapshot
         FROM ${table} WHERE ${inSlice('svc_id')}
         ORDER BY svc_id, version DESC, updated_at DESC LIMIT 1 BY svc_id
       ) WHERE (NOT unfinished_snapshot AND merged_into IS NULL)
            OR (unfinished_snapshot AND svc_id GLOBAL IN (
                  SELECT svc_id FROM ${db}.${IDENTITY_LINKS.name} ${COUNTED}
                  AND svc_id GLOBAL IN (SELECT svc_id FROM ${table} WHERE msg_id IN {unfinished:Array(String)}))) ${BOUNDED}`,
  );
  for await (const row of rows) {
    const attributes: Record<string, string | boolean | number> = {};
    for (const column of columns) {
      const value = row[column];
      if (value !== null && value !== undefined) attributes[column] = value;
    }
    const profile: CurrentProfile = { svc_id: String(row.svc_id), version: Number(row.version), attributes };
    if (row.redacted === true || row.redacted === 1) profile.redacted = true;
    if (typeof row.field_at === 'string' && row.field_at !== '')
      profile.times = JSON.parse(row.field_at) as Record<string, number>;
    yield profile;
  }
}

/**
 * The latest membership of every customer and list (`svc_all` included): the change latest in acceptance
 * order (`at`), then by version (rows stored before `at` was kept read 0), whatever order processors
 * stored them in; a customer's memberships together.
 */
export async function* consentStates(
  read: RebuildRead,
): AsyncIterable<{ svc_id: string; list_id: string; subscribed: boolean; version: number; at?: number }> {
  const history = `${read.db}.${CONSENT_HISTORY.name}`;
  const rows = sliced<{
    svc_id: string;
    list_id: string;
    subscribed: boolean;
    latest: string;
    latest_at: string;
  }>(
    read,
    `SELECT count() AS rows FROM ${history}`,
    `SELECT svc_id, list_id, argMax(subscribed, (at, version)) AS subscribed, max(version) AS latest,
            max(at) AS latest_at
       FROM ${history} ${COUNTED} AND ${inSlice('svc_id')}
       -- consent of a push token (POST /v3/consent) is the identifier's, not a list membership
       AND source != 'identifier_consent'
       GROUP BY svc_id, list_id ORDER BY svc_id ${BOUNDED}`,
  );
  for await (const r of rows) {
    const at = Number(r.latest_at);
    yield {
      svc_id: r.svc_id,
      list_id: r.list_id,
      subscribed: Boolean(r.subscribed),
      version: Number(r.latest),
      ...(at > 0 ? { at } : {}),
    };
  }
}

export async function* identifierUpdates(
  read: RebuildRead,
): AsyncIterable<{ field: string; value: string; version: number; change: string }> {
  const updates = `${read.db}.${IDENTIFIER_UPDATES.name}`;
  // LIMIT 1 BY: a change is replayed once, even if an insert was ever repeated outside the dedup window.
  // An identifier's changes are all in one slice, in version order.
  const rows = sliced<{ field: string; value: string; version: string; change: string }>(
    read,
    `SELECT count() AS rows FROM ${updates}`,
    `SELECT field, value, version, change FROM ${updates} ${COUNTED} AND ${inSlice(`concat(field, ':', value)`)}
       ORDER BY field, value, version LIMIT 1 BY field, value, version ${BOUNDED}`,
  );
  for await (const r of rows)
    yield { field: r.field, value: r.value, version: Number(r.version), change: r.change };
}

/**
 * The orders an order-state rebuild needs when its state forgets an order `retention` after its last
 * change: those with a summary stored since (`orders.updated_at` is when the processor applied the
 * change). Orders and their changes are both sharded by order: on a cluster each shard reads its own.
 */
const ORDERS_CHANGED_SINCE = `order_id ${coShardedIn(ORDER_CHANGES, 'order_id', ORDERS, 'order_id')} (
         SELECT order_id FROM {db}.${ORDERS.name} WHERE updated_at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC'))`;

/**
 * Pending updates (seq 0) of messages still in the commit log. An order with no summary yet is not among
 * the orders changed since, but its pending update must survive any number of rebuilds while an order
 * event accepted before it can still be delivered: within the bus's redelivery horizon, which the
 * commit log outlives by a day (REDELIVERY_HORIZON_MS, CommitLogPruner). Read through the msg_id index,
 * so what it costs follows the recent messages, not the log's age. The commit log is sharded by message,
 * the changes by order: GLOBAL IN.
 */
const PENDING_WITHIN_HORIZON = `seq = 0 AND msg_id GLOBAL IN (SELECT msg_id FROM {db}.${INGEST_COMMITS.name} WHERE done = 1)`;

/**
 * The order changes' read (parameters `unfinished`, `slice_count`, `slice_index` and, with `since`,
 * `since`); an order's changes are all in one slice.
 */
export function orderChangesSql(db: string, since?: number): string {
  const columns = declaredColumnNames(ORDER_CHANGES).join(', ');
  const table = `${db}.${ORDER_CHANGES.name}`;
  const counted = `${COUNTED} AND ${inSlice('order_id')}`;
  // Two reads, each pruned by its own index (an OR of the two would read every granule): the changes of
  // the orders changed since, and the pending updates that may still apply.
  const from =
    since === undefined
      ? `${table} ${counted}`
      : `(SELECT ${columns} FROM ${table} ${counted} AND ${ORDERS_CHANGED_SINCE.replace('{db}', db)}
          UNION ALL
          SELECT ${columns} FROM ${table} ${counted} AND ${PENDING_WITHIN_HORIZON.replace('{db}', db)})`;
  // LIMIT 1 BY: a change is in the log once, even if an insert was ever repeated outside the dedup window
  // (by change too: an order's pending updates all have seq 0), and read once when both reads find it.
  return `SELECT ${columns} FROM ${from}
       ORDER BY order_id, seq, change_id LIMIT 1 BY order_id, seq, change_id ${BOUNDED}, ${CO_SHARDED_SETTING}`;
}

export function orderChanges(read: RebuildRead, since?: number): AsyncIterable<RowOf<typeof ORDER_CHANGES>> {
  // Sized by the whole log: a bounded read is smaller, and then merely split more finely than it needs.
  return sliced<RowOf<typeof ORDER_CHANGES>>(
    read,
    `SELECT count() AS rows FROM ${read.db}.${ORDER_CHANGES.name}`,
    orderChangesSql(read.db, since),
    since === undefined ? {} : { since: Math.floor(since) },
  );
}

export function optOutPool(read: RebuildRead): AsyncIterable<{ kind: string; value: string }> {
  const pool = `${read.db}.${OPTOUT_POOL.name}`;
  return sliced<{ kind: string; value: string }>(
    read,
    `SELECT count() AS rows FROM ${pool}`,
    `SELECT DISTINCT kind, value FROM ${pool} ${COUNTED} AND ${inSlice(`concat(kind, ':', value)`)} ${BOUNDED}`,
  );
}
