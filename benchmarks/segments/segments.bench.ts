// First: the roles' node flags (it may restart this process with them).
import '../lib/role-node-flags.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { join } from 'node:path';
import { AccountsService } from '@cdp/accounts';
import { loadConfig } from '@cdp/config';
import { createLogger } from '@cdp/logger';
import { SegmentEventCounts, type DigestedSegmentEventCounts } from '@cdp/segments';
import { AnalyticStore } from '@cdp/store';
import { createCdpApp } from '../../apps/cdp/src/cdp.app.js';
import { args, median, percentile, printTable, writeResults } from '../lib/stats.js';
import type { LookupJob } from './lookup.worker.js';
import { WORKLOAD_OPTIONS, condition, createSegments, lookupLoad, sendEvents, subsetOf } from './workload.js';

/**
 * `npm run bench:segments`: on the embedded wiring (chDB: lookups count from the event digests),
 * `rounds` times over: ingest CPU per event (the process's own CPU time while a fixed set of events is
 * sent and stored) with no segment, with 20 whose account has no digests (no segment work per event, as
 * before them) and with 20 whose digests are built (each stored event added); then the GraphQL audience
 * lookup the SDKs make (every segment in `subset`), counted by the store query and from the digests:
 * closed loop at `concurrency` for its peak, then open loop at half of it while ingest runs at half of
 * its own peak. Medians of the rounds.
 */
const opt = args(WORKLOAD_OPTIONS);

const dataDir = mkdtempSync(join(tmpdir(), 'cdp-bench-segments-'));
const config = loadConfig({
  CDP_DATA_DIR: dataDir,
  CDP_ADMIN_TOKEN: 'bench-admin',
  LOG_LEVEL: 'warn',
  PORT: '0',
});
const app = await createCdpApp(config, createLogger('warn'));
await app.listen({ port: 0, host: '127.0.0.1' });
const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
const store = app.get(AnalyticStore);

/** Sends `events` events over `customers` customers, 1000 a request; the process's CPU milliseconds per event. */
async function ingest(
  name: string,
  segments: number,
  digested = false,
): Promise<{ cpuUsPerEvent: number; wallMs: number; key: string; account: string }> {
  const { account, privateKey } = await app.get(AccountsService).create({ name });
  await createSegments(url, privateKey, segments);
  // The account's digests built before its events: each stored event is then added as it commits.
  if (digested)
    await counts.startBuild(account.id, counts.digests.scopeFor(account.id, conditions(), Date.now()));
  await gc();
  const started = process.cpuUsage();
  const wall = performance.now();
  const total = Number(opt.events);
  for (let sent = 0; sent < total; sent += 1000)
    await send(account.trackerId, sent, Math.min(1000, total - sent));
  await storedAtLeast(account.id, total);
  const cpu = process.cpuUsage(started);
  return {
    cpuUsPerEvent: (cpu.user + cpu.system) / total,
    wallMs: performance.now() - wall,
    key: account.trackerId,
    account: account.id,
  };
}

/** Events `from`… of the bench's sequence into the account of `key`. */
function send(key: string, from: number, n: number): Promise<void> {
  return sendEvents(url, key, Number(opt.customers), from, n);
}

async function storedAtLeast(account: string, total: number): Promise<void> {
  for (;;) {
    const [row] = await store.query<{ n: string }>(account, 'SELECT count() AS n FROM {db}.events');
    if (Number(row?.n) >= total) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The conditions of the bench's segments, in order. */
function conditions() {
  return Array.from({ length: Number(opt.segments) }, (_, s) => condition(s));
}

async function gc(): Promise<void> {
  (globalThis as { gc?: () => void }).gc?.();
  await new Promise((r) => setTimeout(r, 200));
}

const counts = app.get<DigestedSegmentEventCounts>(SegmentEventCounts);
// A first run warms the process (JIT, chDB, the codec) so that no measured run pays for it.
await ingest('bench-warmup', 0);
const rounds = Number(opt.rounds);
const ingestRuns: { none: number; before: number; after: number; peak: number }[] = [];
let lookupAccount = { key: '', account: '' };
for (let r = 0; r < rounds; r++) {
  const none = await ingest(`bench-none-${r}`, 0);
  const before = await ingest(`bench-before-${r}`, Number(opt.segments));
  const after = await ingest(`bench-after-${r}`, Number(opt.segments), true);
  ingestRuns.push({
    none: none.cpuUsPerEvent,
    before: before.cpuUsPerEvent,
    after: after.cpuUsPerEvent,
    peak: Number(opt.events) / (after.wallMs / 1000),
  });
  lookupAccount = after;
}
const subset = subsetOf(Number(opt.segments));
const lookupsOf = (job: Pick<LookupJob, 'seconds' | 'concurrency' | 'rate'>, onMeasuring?: () => void) =>
  lookupLoad({ url, key: lookupAccount.key, customers: Number(opt.customers), subset, ...job }, onMeasuring);

/** Ingest into the lookups' account at `rate` events a second (100 a request) until stopped. */
function backgroundIngest(rate: number): { stop(): Promise<number> } {
  let stopped = false;
  let sent = Number(opt.events);
  const start = performance.now();
  const running = (async () => {
    while (!stopped) {
      const due = start + ((sent - Number(opt.events)) * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      await send(lookupAccount.key, sent, 100);
      sent += 100;
    }
  })();
  return {
    async stop() {
      stopped = true;
      await running;
      return ((sent - Number(opt.events)) * 1000) / (performance.now() - start);
    },
  };
}

interface LookupRun {
  peak: number;
  rate: number;
  p50: number;
  p99: number;
  n: number;
  ingestRate: number;
  /** The process's CPU per lookup in the closed loop (the bench's client side included): load-independent. */
  cpuMs: number;
  /** The server's longest event-loop delay and garbage-collection pause during the open loop. */
  loopMaxMs: number;
  gcMaxMs: number;
}

/** The lookup's peak (closed loop at `concurrency`), then its percentiles at half of it (open loop) under ingest. */
async function lookups(ingestRate: number): Promise<LookupRun> {
  const seconds = Number(opt.seconds);
  let cpu = process.cpuUsage();
  const closed = await lookupsOf(
    { seconds, concurrency: Number(opt.concurrency) },
    () => (cpu = process.cpuUsage()),
  );
  const done = closed.latencies.length;
  const peak = done / closed.seconds;
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000 / done;
  const rate = peak / 2;
  let stalls = watchStalls();
  const background = ingestRate > 0 ? backgroundIngest(ingestRate) : undefined;
  const { latencies: sorted } = await lookupsOf({ seconds, rate }, () => {
    stalls.stop();
    stalls = watchStalls();
  });
  const achieved = (await background?.stop()) ?? 0;
  const { loopMaxMs, gcMaxMs } = stalls.stop();
  return {
    peak,
    rate,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    n: sorted.length,
    ingestRate: achieved,
    cpuMs,
    loopMaxMs,
    gcMaxMs,
  };
}

/**
 * What stalls the server's event loop while lookups run: its longest delay, and the longest garbage
 * collection pause (a tail the lookup's own work does not explain is one of these, or the machine's).
 */
function watchStalls(): { stop(): { loopMaxMs: number; gcMaxMs: number } } {
  const loop = monitorEventLoopDelay({ resolution: 5 });
  let gcMaxMs = 0;
  const gcs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcMaxMs = Math.max(gcMaxMs, e.duration);
  });
  gcs.observe({ entryTypes: ['gc'] });
  loop.enable();
  return {
    stop() {
      loop.disable();
      gcs.disconnect();
      return { loopMaxMs: loop.max / 1e6, gcMaxMs };
    },
  };
}

// Half of the ingest's own peak (events a second while a run was sent and stored), as the issue asks.
const halfIngest = median(ingestRuns.map((r) => r.peak)) / 2;
// Each mode alone first (the lookup's own cost), then while ingest runs (the embedded process serves both).
const modes = ['store query', 'digests', 'store query, under ingest', 'digests, under ingest'];
const runs: LookupRun[][] = modes.map(() => []);
for (let r = 0; r < rounds; r++) {
  for (const [i, mode] of modes.entries()) {
    counts.digesting = mode.startsWith('digests');
    runs[i]!.push(await lookups(mode.endsWith('under ingest') ? halfIngest : 0));
  }
}
const medianOf = (runs: LookupRun[]) => ({
  peak: median(runs.map((x) => x.peak)),
  rate: median(runs.map((x) => x.rate)),
  p50: median(runs.map((x) => x.p50)),
  p99: median(runs.map((x) => x.p99)),
  n: median(runs.map((x) => x.n)),
  ingestRate: median(runs.map((x) => x.ingestRate)),
  cpuMs: median(runs.map((x) => x.cpuMs)),
  loopMaxMs: median(runs.map((x) => x.loopMaxMs)),
  gcMaxMs: median(runs.map((x) => x.gcMaxMs)),
});
const ingestMedian = {
  none: median(ingestRuns.map((x) => x.none)),
  before: median(ingestRuns.map((x) => x.before)),
  after: median(ingestRuns.map((x) => x.after)),
};
const results = {
  ingest: { runs: ingestRuns, median: ingestMedian, ratio: ingestMedian.after / ingestMedian.before },
  lookup: Object.fromEntries(modes.map((m, i) => [m, { median: medianOf(runs[i]!), runs: runs[i]! }])),
  loadAverage: loadavg(),
};
printTable(
  `ingest: process CPU per event (median of ${rounds})`,
  [
    ['no segment', ingestMedian.none],
    [`${opt.segments} segments, no digests`, ingestMedian.before],
    [`${opt.segments} segments, digests built`, ingestMedian.after],
  ].map(([name, v]) => ({ account: name as string, 'cpu µs/event': v as number })),
);
printTable(
  `GraphQL audience lookup at half peak (median of ${rounds}; ingest at ${Math.round(halfIngest)}/s where under ingest)`,
  modes
    .map((m, i) => [m, medianOf(runs[i]!)] as const)
    .map(([name, l]) => {
      return {
        counts: name,
        'peak/s': l.peak,
        'rate/s': l.rate,
        'p50 ms': l.p50,
        'p99 ms': l.p99,
        n: l.n,
        'ingest/s': l.ingestRate,
        'cpu ms/lookup': l.cpuMs,
        'loop max ms': l.loopMaxMs,
        'gc max ms': l.gcMaxMs,
      };
    }),
);
process.stdout.write(
  `load average: ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}\n`,
);
process.stdout.write(`results: ${writeResults('segments', { opt, results })}\n`);
await app.close();
// The run's store (~200 MB at the defaults) is of no use once its figures are written.
rmSync(dataDir, { recursive: true, force: true });
