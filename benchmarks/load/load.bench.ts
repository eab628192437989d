import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { parse } from 'csv-parse';
import { AccountsService } from '@cdp/accounts';
import { Buckets } from '@cdp/buckets';
import { loadConfig } from '@cdp/config';
import { eventId, normalizeEvent, toStoreTime } from '@cdp/domain';
import { ActivityLog } from '@cdp/loader';
import { createLogger } from '@cdp/logger';
import { AnalyticStore, type EventRow } from '@cdp/store';
import { createCdpApp } from '../../apps/cdp/src/cdp.app.js';
import { args, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * `npm run bench:load`: one events CSV of `--rows` rows (several sizes: `--rows 100000,1000000`) dropped
 * into the all-in-one platform's incoming bucket, measured from the drop to the last row visible in the
 * store, beside two baselines on the same file in the same run: a raw csv-parse of it, and a direct store
 * insert of its rows (1000 a time, the loader's message size). Peak RSS of the process while it loads,
 * at each size, shows whether memory stays flat as the file grows.
 */
const opt = args({ rows: '1000000', population: 50_000 });
const sizes = String(opt.rows)
  .split(',')
  .map((s) => Number(s));
const now = () => performance.now();
const HEADER = 'type,action,email,ts,page,title\n';

async function writeFile(file: string, rows: number): Promise<void> {
  const out = createWriteStream(file);
  out.write(HEADER);
  const base = 1_700_000_000;
  for (let i = 0; i < rows; i++) {
    const line = `pageview,,u${i % Number(opt.population)}@example.com,${base + i},/p/${i % 1000},"Page ${i % 97}, ""quoted"""\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** Baseline: csv-parse of the file alone (records counted, nothing else). */
async function parseBaseline(file: string): Promise<number> {
  const started = now();
  let n = 0;
  for await (const record of createReadStream(file).pipe(parse({ from_line: 2 }))) if (record) n++;
  if (n === 0) throw new Error('nothing parsed');
  return (now() - started) / 1000;
}

/** Baseline: the same rows inserted straight into the store, 1000 a time; only the inserts are timed. */
async function insertBaseline(store: AnalyticStore, account: string, file: string): Promise<number> {
  await store.ensureAccount(account);
  let seconds = 0;
  let batch: EventRow[] = [];
  let b = 0;
  const received = Date.now();
  const flush = async () => {
    const started = now();
    await store.write(
      account,
      { identityLinks: [], merges: [], conflicts: [], customers: [], events: batch },
      false,
    );
    seconds += (now() - started) / 1000;
    batch = [];
    b++;
  };
  for await (const record of createReadStream(file).pipe(parse({ from_line: 2 })) as AsyncIterable<
    string[]
  >) {
    const [type, , email, ts, page, title] = record as [string, string, string, string, string, string];
    const e = normalizeEvent({ type: type, identifiers: { email }, data: { ts, page, title } }, received);
    if ('invalidTs' in e) throw new Error('invalid row');
    batch.push({
      event_id: eventId(`baseline-${b}`, batch.length),
      msg_id: `baseline-${b}`,
      svc_id: `c-${email}`,
      ts: toStoreTime(e.ts),
      received_at: toStoreTime(received),
      type: e.type,
      action: e.action,
      channel: e.channel,
      identifiers: { email: String(e.identifiers.email) },
      data: e.data,
      order: null,
    });
    if (batch.length === 1000) await flush();
  }
  if (batch.length) await flush();
  return seconds;
}

const results: Row[] = [];
const memory: Row[] = [];
for (const rows of sizes) {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-load-'));
  const file = join(dir, 'svc_events_bench.csv');
  await writeFile(file, rows);
  const parseSeconds = await parseBaseline(file);

  const config = loadConfig({
    CDP_DATA_DIR: join(dir, 'data'),
    LOG_LEVEL: 'warn',
    CDP_LOADER_POLL_MS: '100',
    CDP_LOADER_RECORDS_PER_MESSAGE: '1000',
  });
  const app = await createCdpApp(config, createLogger('warn'));
  const store = app.get(AnalyticStore);
  const accounts = app.get(AccountsService);
  // The store's own memory as it takes the rows (chDB's native memory grows with the data it holds).
  const rssBeforeInsert = process.memoryUsage().rss;
  let insertPeak = rssBeforeInsert;
  const insertSampler = setInterval(() => (insertPeak = Math.max(insertPeak, process.memoryUsage().rss)), 50);
  const insertSeconds = await insertBaseline(
    store,
    (await accounts.create({ name: 'baseline' })).account.id,
    file,
  );

  clearInterval(insertSampler);

  const { account } = await accounts.create({ name: 'bench' });
  await store.ensureAccount(account.id);
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const heapBefore = process.memoryUsage().heapUsed;
  let peak = rssBefore;
  let peakHeap = heapBefore;
  const sampler = setInterval(() => {
    const { rss, heapUsed } = process.memoryUsage();
    peak = Math.max(peak, rss);
    peakHeap = Math.max(peakHeap, heapUsed);
  }, 50);
  // The drop: the file lands whole (a rename into the bucket), then the clock runs until all is visible.
  await app
    .get(Buckets)
    .write('incoming', `${account.trackerId}/svc_events_bench.csv`, createReadStream(file));
  const dropped = now();
  let publishedSeconds: number | undefined;
  const activity = app.get(ActivityLog);
  for (;;) {
    if (publishedSeconds === undefined) {
      const [entry] = (await activity.list(account.id, 1)).activity;
      if (entry?.state === 'completed') publishedSeconds = (now() - dropped) / 1000;
    }
    const [row] = await store.query<{ n: string | number }>(
      account.id,
      'SELECT count() AS n FROM {db}.events',
    );
    if (Number(row?.n ?? 0) >= rows) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const loadSeconds = (now() - dropped) / 1000;
  publishedSeconds ??= loadSeconds;
  clearInterval(sampler);
  global.gc?.();
  const heapAfter = process.memoryUsage().heapUsed;
  await app.close();
  rmSync(dir, { recursive: true, force: true });

  const insertRate = rows / insertSeconds;
  results.push(
    {
      rows,
      scenario: 'raw csv-parse of the file',
      seconds: parseSeconds,
      'rows/s': rows / parseSeconds,
      'vs direct insert': rows / parseSeconds / insertRate,
    },
    {
      rows,
      scenario: 'direct store insert of the same rows',
      seconds: insertSeconds,
      'rows/s': insertRate,
      'vs direct insert': 1,
    },
    {
      rows,
      scenario: 'file dropped -> all of it on the bus (loader: read, check, publish)',
      seconds: publishedSeconds,
      'rows/s': rows / publishedSeconds,
      'vs direct insert': rows / publishedSeconds / insertRate,
    },
    {
      rows,
      scenario: 'file dropped -> rows visible (loader, bus, processor)',
      seconds: loadSeconds,
      'rows/s': rows / loadSeconds,
      'vs direct insert': rows / loadSeconds / insertRate,
    },
  );
  memory.push({
    rows,
    'RSS before (MB)': rssBefore / 2 ** 20,
    'peak RSS while loading (MB)': peak / 2 ** 20,
    'growth (MB)': (peak - rssBefore) / 2 ** 20,
    'JS heap peak growth (MB)': (peakHeap - heapBefore) / 2 ** 20,
    'JS heap kept after (MB)': (heapAfter - heapBefore) / 2 ** 20,
    'RSS growth of the direct insert (MB)': (insertPeak - rssBeforeInsert) / 2 ** 20,
  });
}
printTable('bulk file load benchmark (embedded wiring, one events CSV)', results);
printTable('memory of the all-in-one process while it loads', memory);
writeResults('load', { results, memory });
process.exit(0);
