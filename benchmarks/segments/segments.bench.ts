import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccountsService } from '@cdp/accounts';
import { loadConfig } from '@cdp/config';
import { createLogger } from '@cdp/logger';
import { SegmentEventCounts, type StoreSegmentEventCounts } from '@cdp/segments';
import { AnalyticStore } from '@cdp/store';
import { createCdpApp } from '../../apps/cdp/src/cdp.app.js';
import { args, percentile, printTable, writeResults } from '../lib/stats.js';

/**
 * `npm run bench:segments`: on the embedded wiring, (1) ingest CPU per event (the process's own CPU time
 * while a fixed set of events is sent and stored) with no segment defined, then with 20; (2) the GraphQL
 * audience lookup the SDKs make (every segment in `subset`), closed loop at `concurrency` for its peak
 * rate, then open loop at half that rate for its latency percentiles.
 */
const opt = args({ customers: 2000, events: 20_000, segments: 20, concurrency: 8, seconds: 10 });
const DAY = 86_400_000;

const config = loadConfig({
  CDP_DATA_DIR: mkdtempSync(join(tmpdir(), 'cdp-bench-segments-')),
  CDP_ADMIN_TOKEN: 'bench-admin',
  LOG_LEVEL: 'warn',
  PORT: '0',
});
const app = await createCdpApp(config, createLogger('warn'));
await app.listen({ port: 0, host: '127.0.0.1' });
const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
const store = app.get(AnalyticStore);

async function call(path: string, key: string, body: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const TYPES = [
  ['product', 'view'],
  ['product', 'add_to_cart'],
  ['page', 'view'],
] as const;

/** Sends `events` events over `customers` customers, 1000 a request; the process's CPU milliseconds per event. */
async function ingest(
  name: string,
  segments: number,
): Promise<{ cpuUsPerEvent: number; wallMs: number; key: string; account: string }> {
  const { account, privateKey } = await app.get(AccountsService).create({ name });
  for (let s = 0; s < segments; s++) {
    const res = await call('/v3/segments', privateKey, {
      id: `segment_${s}`,
      name: `Segment ${s}`,
      definition: {
        ...(s % 2 ? { customer: { field: 'email', operator: 'like', value: `%${s}%` } } : {}),
        events: [{ type: 'product', action: 'add_to_cart', within_days: 1 + s, min_count: 1 + (s % 3) }],
      },
    });
    if (res.status !== 201) throw new Error(`segment: ${res.status} ${await res.text()}`);
  }
  await gc();
  const started = process.cpuUsage();
  const wall = performance.now();
  const total = Number(opt.events);
  for (let sent = 0; sent < total; sent += 1000) {
    const batch = Array.from({ length: Math.min(1000, total - sent) }, (_, i) => {
      const n = sent + i;
      const [type, action] = TYPES[n % TYPES.length]!;
      return {
        type,
        action,
        identifiers: { email: `c${n % Number(opt.customers)}@bench.example` },
        data: { product_id: `p${n % 97}`, ts: new Date(Date.now() - (n % 10) * DAY).toISOString() },
      };
    });
    const res = await call('/v3/events', account.trackerId, batch);
    if (res.status !== 202) throw new Error(`events: ${res.status}`);
  }
  for (;;) {
    const [row] = await store.query<{ n: string }>(account.id, 'SELECT count() AS n FROM {db}.events');
    if (Number(row?.n) >= total) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const cpu = process.cpuUsage(started);
  return {
    cpuUsPerEvent: (cpu.user + cpu.system) / total,
    wallMs: performance.now() - wall,
    key: account.trackerId,
    account: account.id,
  };
}

async function gc(): Promise<void> {
  (globalThis as { gc?: () => void }).gc?.();
  await new Promise((r) => setTimeout(r, 200));
}

// A first run warms the process (JIT, chDB, the codec) so that neither measured run pays for it.
await ingest('bench-warmup', 0);
const none = await ingest('bench-none', 0);
const twenty = await ingest('bench-twenty', Number(opt.segments));
const subset = JSON.stringify(Array.from({ length: Number(opt.segments) }, (_, s) => `segment_${s}`));
let next = 0;
const lookup = async (): Promise<number> => {
  const id = next++ % Number(opt.customers);
  const t = performance.now();
  const res = await call('/v3/graphql', twenty.key, {
    query: `query {customer(email : "c${id}@bench.example") {audiences(subset: ${subset}) {edges {node {name state}}}}}`,
  });
  const body = (await res.json()) as { data?: { customer: unknown }; errors?: unknown };
  if (!body.data?.customer) throw new Error(`lookup: ${JSON.stringify(body)}`);
  return performance.now() - t;
};

/** The lookup's peak (closed loop at `concurrency`) and its percentiles at half of it (open loop). */
async function lookups(): Promise<{ peak: number; rate: number; p50: number; p99: number; n: number }> {
  const seconds = Number(opt.seconds);
  let done = 0;
  const peakEnd = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: Number(opt.concurrency) }, async () => {
      while (performance.now() < peakEnd) {
        await lookup();
        done++;
      }
    }),
  );
  const peak = done / seconds;
  // Half of it: open loop, one request every 1/rate seconds whatever the answers take.
  const rate = peak / 2;
  const latencies: Promise<number>[] = [];
  const start = performance.now();
  for (let i = 0; i < rate * seconds; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    latencies.push(lookup());
  }
  const sorted = (await Promise.all(latencies)).sort((a, b) => a - b);
  return { peak, rate, p50: percentile(sorted, 50), p99: percentile(sorted, 99), n: sorted.length };
}

/** The counts query alone, one customer at a time (what each lookup asks of the store). */
async function countsQueryMs(): Promise<{ p50: number; p99: number }> {
  const counts = app.get(SegmentEventCounts);
  const conditions = Array.from({ length: Number(opt.segments) }, (_, s) => ({
    type: 'product',
    action: 'add_to_cart',
    within_days: 1 + s,
    min_count: 1 + (s % 3),
  }));
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const [row] = await store.query<{ svc_id: string }>(
      twenty.account,
      'SELECT svc_id FROM {db}.events WHERE type = {t:String} LIMIT 1 OFFSET {o:UInt32}',
      { t: 'product', o: i },
    );
    const before = performance.now();
    await counts.count({ account: twenty.account, customers: [row!.svc_id], conditions, now: Date.now() });
    times.push(performance.now() - before);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

// The same lookups, one store query each (as before) and coalesced while a query runs (now).
const counts = app.get<StoreSegmentEventCounts>(SegmentEventCounts);
counts.coalescing = false;
const alone = await countsQueryMs();
const single = await lookups();
counts.coalescing = true;
const coalesced = await lookups();

const results = {
  ingest: {
    none: none.cpuUsPerEvent,
    twenty: twenty.cpuUsPerEvent,
    ratio: twenty.cpuUsPerEvent / none.cpuUsPerEvent,
  },
  countsQuery: alone,
  lookup: { oneQueryEach: single, coalesced },
  loadAverage: loadavg(),
};
printTable('ingest: process CPU per event', [
  { segments: 0, 'cpu µs/event': none.cpuUsPerEvent, 'wall ms': none.wallMs },
  { segments: Number(opt.segments), 'cpu µs/event': twenty.cpuUsPerEvent, 'wall ms': twenty.wallMs },
]);
printTable('the counts query alone, one customer at a time', [{ 'p50 ms': alone.p50, 'p99 ms': alone.p99 }]);
printTable(
  'GraphQL audience lookup',
  [
    ['one store query each', single],
    ['coalesced while a query runs', coalesced],
  ].map(([name, r]) => {
    const l = r as typeof single;
    return {
      counts: name as string,
      'peak/s': l.peak,
      'rate/s': l.rate,
      'p50 ms': l.p50,
      'p99 ms': l.p99,
      n: l.n,
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
