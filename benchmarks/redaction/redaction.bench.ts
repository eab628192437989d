import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouseStore, databaseName } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { args, median, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * `npm run bench:redaction`: compliance opt-outs against one account of `events` events on chDB, the
 * way the processor applies them before and after issue 31.
 *
 * - per message (before): one `redactCustomers` per opt-out, as the pipeline ran them, one message
 *   at a time;
 * - per batch (after): one `redactCustomers` per bus batch (`batch` opt-outs, the bus's default fetch
 *   is 32 messages), and one for all `optouts` at once (a backlog drained in one batch).
 *
 * Each mode redacts its own `optouts` customers (so none finds the rows already cleared). `sample`
 * caps how many opt-outs the per-message mode actually runs: its total is then the sample's time per
 * opt-out times `optouts`, and the table says so; `batches` caps the batches of `batch` the same way.
 */
const opt = args({
  events: 10_000_000,
  customers: 100_000,
  optouts: 1000,
  batch: 32,
  sample: 1000,
  batches: 1000,
});
const events = Number(opt.events);
const customers = Number(opt.customers);
const optouts = Number(opt.optouts);
const batch = Number(opt.batch);
const sample = Number(opt.sample);

const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-redaction-'));
const transport = new ChdbTransport(dir);
const store = new ClickHouseStore(transport);
const account = 'bench';
const db = databaseName(account);
await store.ensureAccount(account);

const load = performance.now();
const step = 1_000_000;
for (let from = 0; from < events; from += step) {
  const n = Math.min(step, events - from);
  await transport.exec(`INSERT INTO ${db}.events (event_id, msg_id, svc_id, ts, received_at, type, action, channel, identifiers)
    SELECT concat('e', toString(number)), concat('m', toString(intDiv(number, 100))),
      concat('c', toString(number % ${customers})),
      toDateTime64('2026-01-01 00:00:00', 3, 'UTC') + toIntervalSecond(intDiv(number, 5)),
      toDateTime64('2026-01-01 00:00:00', 3, 'UTC') + toIntervalSecond(intDiv(number, 5)),
      'page', 'view', 'web', map('email', concat('c', toString(number % ${customers}), '@x.com'))
    FROM numbers(${from}, ${n})`);
  process.stdout.write(`loaded ${(from + n).toLocaleString('en-US')} events\n`);
}
await transport.exec(`INSERT INTO ${db}.customers (svc_id, version, msg_id, updated_at)
  SELECT concat('c', toString(number)), 1, concat('p', toString(number)), now64(3) FROM numbers(${customers})`);
await transport.exec(`OPTIMIZE TABLE ${db}.events FINAL`);
const loadMs = performance.now() - load;
const [parts] = await transport.query<{ n: number }>(
  `SELECT count() AS n FROM system.parts WHERE database = '${db}' AND table = 'events' AND active`,
);
process.stdout.write(`loaded in ${(loadMs / 1000).toFixed(1)} s, events in ${parts?.n} parts\n`);

/** `optouts` customers of their own for each mode, spread over the id space. */
let next = 0;
const customersFor = (n: number) => Array.from({ length: n }, () => `c${(next++ * 97) % customers}`);

/** Runs `ids` in calls of `per`, at most `max` calls; the total is scaled to all of `ids`. */
async function timed(ids: string[], per: number, max = Infinity) {
  const calls: number[] = [];
  const started = performance.now();
  for (let i = 0; i < ids.length && calls.length < max; i += per) {
    const t = performance.now();
    await store.redactCustomers(account, ids.slice(i, i + per));
    calls.push(performance.now() - t);
  }
  const ms = performance.now() - started;
  const done = Math.min(ids.length, calls.length * per);
  return { ms, calls, done, totalMs: (ms / done) * ids.length };
}

const rows: Row[] = [];
const results: Record<string, unknown> = { events, customers, optouts, batch, sample, loadMs };
const modes = [
  { name: 'per message (before)', per: 1, max: sample },
  { name: `per batch of ${batch} (after)`, per: batch, max: Number(opt.batches) },
  { name: `one batch of ${optouts} (after)`, per: optouts, max: 1 },
];
for (const { name, per, max } of modes) {
  const run = await timed(customersFor(optouts), per, max);
  rows.push({
    mode: name,
    mutations_per_table: Math.ceil(optouts / per),
    'total s': run.totalMs / 1000,
    'median call ms': median(run.calls),
    measured: run.done === optouts ? 'all' : `${run.done} of ${optouts}, scaled`,
  });
  results[name] = { ...run, medianCallMs: median(run.calls) };
  process.stdout.write(`${name}: ${(run.totalMs / 1000).toFixed(1)} s\n`);
}
// The rows really are cleared: the last mode's customers hold no email any more.
const [left] = await transport.query<{ n: number }>(
  `SELECT count() AS n FROM ${db}.events WHERE svc_id IN {ids:Array(String)} AND length(identifiers) > 0`,
  { ids: Array.from({ length: 10 }, (_, i) => `c${((next - 1 - i) * 97) % customers}`) },
);
const leftAfter = Number(left?.n ?? -1);
results.leftAfter = leftAfter;
printTable(
  `${optouts} opt-outs, ${events.toLocaleString('en-US')} events, ${customers} customers (chDB)`,
  rows,
);
process.stdout.write(`events of the last 10 redacted customers still holding identifiers: ${leftAfter}\n`);
process.stdout.write(`${writeResults('redaction', results)}\n`);
await store.close();
rmSync(dir, { recursive: true, force: true });
