import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConsoleStoreReads } from '@cdp/console-api/reads';
import { ClickHouseStore, COMMITS_TABLE } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { args, median, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * `npm run bench:console`: what the console's customer and overview pages cost the store, on one chDB
 * account filled by the engine itself (INSERT … SELECT FROM numbers): `events` events over the last day
 * from `customers` customers (100 events a message, each message committed), one order in 20 events'
 * customers, merges and consent changes; and a day of rejection counts as the API writes them (every
 * minute, 10 types × 10 reasons). Each read runs `runs` times; medians reported.
 */
const opt = args({ events: 1_000_000, customers: 100_000, runs: 7 });
const N = Number(opt.events);
const C = Number(opt.customers);
const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-console-'));
const store = new ClickHouseStore(new ChdbTransport(join(dir, 'chdb')));
const reads = new ConsoleStoreReads(store);
const account = 'bench_console';

await store.ensureAccount(account);
const fill = Date.now();
await store.execute(
  account,
  `INSERT INTO {db}.events (event_id, msg_id, svc_id, ts, received_at, type, action, channel, identifiers, \`order\`)
SELECT concat('e', toString(number)), concat('m', toString(intDiv(number, 100))), concat('c', toString(number % ${C})),
  now64(3) - toIntervalMillisecond(number * intDiv(86400000, ${N})), now64(3) - toIntervalMillisecond(number * intDiv(86400000, ${N})),
  ['page', 'product', 'cart', 'order', 'account'][number % 5 + 1], 'view', 'web',
  map('email', concat('c', toString(number % ${C}), '@bench.io')),
  if(number % 5 = 3, concat('{"order_id":"o', toString(number), '","total":', toString(number % 90 + 10), '}'), NULL)
FROM numbers(${N})`,
);
await store.execute(
  account,
  `INSERT INTO {db}.${COMMITS_TABLE} (msg_id, done, at)
SELECT concat('m', toString(number)), 1, now64(3) - toIntervalMillisecond(number * 100 * intDiv(86400000, ${N})) + toIntervalMillisecond(40)
FROM numbers(${Math.ceil(N / 100)})`,
);
await store.execute(
  account,
  `INSERT INTO {db}.customers (svc_id, version, msg_id, updated_at, merged_into)
SELECT concat('c', toString(number)), 1, 'm0', now64(3), if(number % 50 = 1, concat('c', toString(number - 1)), NULL)
FROM numbers(${C})`,
);
await store.execute(
  account,
  `INSERT INTO {db}.identity_links (kind, value, svc_id, born, msg_id, created_at)
SELECT 'email', concat('c', toString(number), '@bench.io'), concat('c', toString(number)), toString(number), 'm0', now64(3)
FROM numbers(${C})`,
);
await store.execute(
  account,
  `INSERT INTO {db}.identity_merges (loser, survivor, seq, cause, msg_id, created_at)
SELECT concat('c', toString(number * 50 + 1)), concat('c', toString(number * 50)), number, ['email:x'], 'm0', now64(3)
FROM numbers(${Math.floor(C / 50)})`,
);
await store.execute(
  account,
  `INSERT INTO {db}.consent_history (svc_id, list_id, subscribed, version, identifier_kind, identifier_value, api_key, source, msg_id, changed_at, stored_at)
SELECT concat('c', toString(number % ${C})), 'news', number % 2 = 0, number, 'email', 'x', 'public', 'subscriptions', 'm0', now64(3), now64(3)
FROM numbers(${C})`,
);
await store.execute(
  account,
  `INSERT INTO {db}.orders (order_id, version, msg_id, updated_at, svc_id, purchased, ts, subtotal, total, revenue, counts_for_lifecycle, cancelled, partial, adjustments)
SELECT concat('o', toString(number * 5 + 3)), 1, 'm0', now64(3), concat('c', toString((number * 5 + 3) % ${C})), true,
  now64(3) - toIntervalMinute(number % 40000), 10, 10, 10, true, false, false, 0
FROM numbers(${Math.floor(N / 5)})`,
);
await store.execute(
  account,
  `INSERT INTO {db}.ingest_rejections (minute, outcome, type, reason, records, msg_id)
SELECT toStartOfMinute(now64(3) - toIntervalMinute(intDiv(number, 100))), 'rejected',
  concat('type_', toString(number % 10)), concat('field_', toString(intDiv(number, 10) % 10), ': is required'),
  number % 7 + 1, concat('flush', toString(intDiv(number, 100)))
FROM numbers(144000)`,
);
const filledMs = Date.now() - fill;

const customer = 'c4242';
const everyone = [customer];
const firstPage = await reads.timeline(account, everyone, 20);
const cases: [string, () => Promise<unknown>][] = [
  ['customer: links', () => reads.links(account, everyone)],
  ['customer: merges', () => reads.merges(account, everyone)],
  ['customer: consent history', () => reads.consentHistory(account, everyone)],
  ['customer: timeline, first page', () => reads.timeline(account, everyone, 20)],
  ['customer: timeline, next page', () => reads.timeline(account, everyone, 20, firstPage.next)],
  ['overview: events/min, hour', () => reads.eventsPerMinute(account, 60)],
  ['overview: events/min, day', () => reads.eventsPerMinute(account, 1440)],
  ['overview: ingest lag, hour', () => reads.ingestLag(account, 60)],
  ['overview: ingest lag, day', () => reads.ingestLag(account, 1440)],
  ['overview: totals', () => reads.totals(account)],
  ['overview: revenue by day', () => reads.revenueByDay(account, 30)],
  ['overview: rejected/min, hour', () => reads.rejectionsPerMinute(account, 60)],
  ['overview: rejected/min, day', () => reads.rejectionsPerMinute(account, 1440)],
  ['overview: top reasons, day', () => reads.topRejectionReasons(account, 1440, 10)],
];
const rows: Row[] = [];
for (const [name, run] of cases) {
  const times: number[] = [];
  let size = 0;
  for (let i = 0; i < Number(opt.runs); i++) {
    const start = performance.now();
    const answer = await run();
    times.push(performance.now() - start);
    size = JSON.stringify(answer).length;
  }
  rows.push({ read: name, median_ms: median(times), max_ms: Math.max(...times), answer_bytes: size });
}
printTable(
  `console reads on ${N.toLocaleString('en-US')} events, ${C.toLocaleString('en-US')} customers (filled in ${filledMs} ms)`,
  rows,
);
const overviewDay = rows
  .filter((r) => String(r.read).startsWith('overview') && !String(r.read).endsWith('hour'))
  .reduce((s, r) => s + Number(r.median_ms), 0);
process.stdout.write(`\noverview (day range), the reads one after another: ${overviewDay.toFixed(1)} ms\n`);
writeResults('console-reads', { options: opt, filledMs, rows });
await store.close();
rmSync(dir, { recursive: true, force: true });
