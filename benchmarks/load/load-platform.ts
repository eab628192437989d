import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccountsService } from '@cdp/accounts';
import { Buckets } from '@cdp/buckets';
import { loadConfig } from '@cdp/config';
import { ActivityLog } from '@cdp/loader';
import { createLogger } from '@cdp/logger';
import { tuneHeap } from '@cdp/runtime';
import { AnalyticStore } from '@cdp/store';
import { createCdpApp } from '../../apps/cdp/src/cdp.app.js';
import { args } from '../lib/stats.js';

/**
 * One load of `bench:load` in a process of its own: the all-in-one platform (loader, bus, processor,
 * chDB) started fresh, the file dropped into its incoming bucket, the clock run until every row is
 * visible in the store. The process holds nothing else, so its memory is the platform's: peak RSS,
 * with what of it V8 (heap, external buffers) and chDB (its own memory tracker) account for.
 * Prints one JSON line.
 */
const opt = args({
  file: '',
  rows: 0,
  'records-per-message': 1000,
  'live-every-ms': 0,
  /** Empty: the configuration's default. */
  'heap-growing-percent': '',
});
const rows = Number(opt.rows);
const file = String(opt.file);
const dir = mkdtempSync(join(tmpdir(), 'cdp-load-platform-'));
const config = loadConfig({
  CDP_DATA_DIR: join(dir, 'data'),
  LOG_LEVEL: 'warn',
  CDP_LOADER_POLL_MS: '100',
  CDP_LOADER_RECORDS_PER_MESSAGE: String(opt['records-per-message']),
  ...(opt['heap-growing-percent'] === ''
    ? {}
    : { CDP_HEAP_GROWING_PERCENT: String(opt['heap-growing-percent']) }),
});
// As every main does (libs/runtime): the platform here is the process the platform would be.
tuneHeap(config);
const app = await createCdpApp(config, createLogger('warn'));
const store = app.get(AnalyticStore);
const { account } = await app.get(AccountsService).create({ name: 'bench' });
await store.ensureAccount(account.id);
global.gc?.();

const before = process.memoryUsage();
const peak = {
  rss: before.rss,
  heapTotal: before.heapTotal,
  heapUsed: before.heapUsed,
  external: before.external,
};
const sampler = setInterval(() => {
  const m = process.memoryUsage();
  peak.rss = Math.max(peak.rss, m.rss);
  peak.heapTotal = Math.max(peak.heapTotal, m.heapTotal);
  peak.heapUsed = Math.max(peak.heapUsed, m.heapUsed);
  peak.external = Math.max(peak.external, m.external);
}, 50);
/**
 * With `--live-every-ms`, a full GC now and then tells the heap still live mid-load (what the load holds,
 * not garbage waiting for the collector); it slows the load, so it is off for the timed rounds.
 */
let peakLive = 0;
const live =
  Number(opt['live-every-ms']) > 0 && global.gc
    ? setInterval(() => {
        global.gc!();
        const used = process.memoryUsage().heapUsed;
        peakLive = Math.max(peakLive, used);
        process.stderr.write(`live heap ${Math.round(used / 2 ** 20)} MB\n`);
      }, Number(opt['live-every-ms']))
    : undefined;
/** chDB's own tracker of the memory its queries, inserts, merges and caches hold. */
const chdbMemory = async (): Promise<number> => {
  const [row] = await store.query<{ v: string | number }>(
    account.id,
    "SELECT value AS v FROM system.metrics WHERE metric = 'MemoryTracking'",
  );
  return Number(row?.v ?? 0);
};
let chdbPeak = await chdbMemory();

// The drop: the file lands whole (a rename into the bucket), then the clock runs until all is visible.
await app.get(Buckets).write('incoming', `${account.trackerId}/svc_events_bench.csv`, createReadStream(file));
const dropped = performance.now();
let publishedSeconds: number | undefined;
/** The loader's first pass: the file read and checked whole (its entry's progress says so), nothing published yet. */
let readSeconds: number | undefined;
const activity = app.get(ActivityLog);
for (;;) {
  if (publishedSeconds === undefined) {
    const [entry] = (await activity.list(account.id, 1)).activity;
    if (readSeconds === undefined && (entry?.progress.records ?? 0) >= rows)
      readSeconds = (performance.now() - dropped) / 1000;
    if (entry?.state === 'completed') publishedSeconds = (performance.now() - dropped) / 1000;
    if (entry && entry.state !== 'completed' && entry.state !== 'running' && entry.state !== 'pending')
      throw new Error(`the file was ${entry.state}: ${entry.rejection_reason ?? ''}`);
  }
  chdbPeak = Math.max(chdbPeak, await chdbMemory());
  const [row] = await store.query<{ n: string | number }>(account.id, 'SELECT count() AS n FROM {db}.events');
  if (Number(row?.n ?? 0) >= rows) break;
  await new Promise((r) => setTimeout(r, 250));
}
const loadSeconds = (performance.now() - dropped) / 1000;
clearInterval(sampler);
clearInterval(live);
global.gc?.();
const after = process.memoryUsage();
await app.close();
rmSync(dir, { recursive: true, force: true });
process.stdout.write(
  `${JSON.stringify({
    rows,
    loadSeconds,
    publishedSeconds: publishedSeconds ?? loadSeconds,
    readSeconds: readSeconds ?? publishedSeconds ?? loadSeconds,
    rssBefore: before.rss,
    peakRss: peak.rss,
    peakHeapTotal: peak.heapTotal,
    peakHeapUsed: peak.heapUsed,
    peakExternal: peak.external,
    heapKept: after.heapUsed - before.heapUsed,
    chdbPeak,
    ...(live ? { peakLive } : {}),
  })}\n`,
);
process.exit(0);
