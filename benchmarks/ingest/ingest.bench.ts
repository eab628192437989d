import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { execFileSync } from 'node:child_process';
import { AccountsService } from '@cdp/accounts';
import { loadConfig } from '@cdp/config';
import { type EventInput } from '@cdp/domain';
import { storedEventRow } from '../lib/event-rows.js';
import { createLogger } from '@cdp/logger';
import { randomBytes } from 'node:crypto';
import { AnalyticStore, ClickHouseStore, type EventRow } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { ingestBacklog, publishBaseline, removeRedisAccount, removeTopology, startScaled } from './scaled.js';
import { createCdpApp } from '../../apps/cdp/src/cdp.app.js';
import { eventBatch, rng } from '../lib/generator.js';
import { args, median, percentile, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * `npm run bench:ingest`: 1000-event batches from several concurrent clients (a worker thread) into
 * the all-in-one server, measuring events/s from the first request to the last event visible in the
 * store, and the latency from each 202 to its events being visible. Baselines on the same data in
 * the same run: JSON.parse of the request bodies, and a direct store insert of the same rows.
 */
const opt = args({
  events: 200_000,
  batch: 1000,
  clients: 4,
  seed: 42,
  population: 50_000,
  wiring: 'embedded',
  // `on`: an event inspector is open for the account (a console's stream, read and discarded); `both`: the
  // embedded run twice in the same process, without and then with it, and their ratio.
  inspector: 'off',
  // with `--inspector both`: rounds of (closed, open), alternated so that drift on a loaded machine hits both
  rounds: 3,
  // embedded runs without `--inspector both`: each after its own raw-store baseline; the medians are reported
  runs: 1,
  // rows per variant of the raw chDB baseline (store-baseline.ts), and its formats and insert sizes
  'baseline-events': 300_000,
  'baseline-formats': 'JSONCompactEachRow,RowBinary (file)',
  'baseline-sizes': '10000,50000',
});
if (!['off', 'on', 'both'].includes(String(opt.inspector))) throw new Error('--inspector is off, on or both');
if (opt.wiring !== 'embedded' && opt.wiring !== 'scaled') throw new Error('--wiring is embedded or scaled');
const scaled = opt.wiring === 'scaled';
const batches = Math.ceil(Number(opt.events) / Number(opt.batch));
const now = () => performance.timeOrigin + performance.now();
const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

// The same bodies the clients will send (same seed).
const random = rng(Number(opt.seed));
const bodies = Array.from({ length: batches }, () =>
  JSON.stringify(eventBatch(random, Number(opt.batch), Number(opt.population))),
);
const totalEvents = batches * Number(opt.batch);

// Baseline: JSON.parse of the same bytes.
const t = now();
for (const body of bodies) JSON.parse(body);
const parseSeconds = (now() - t) / 1000;

/** Baseline: the same rows inserted straight into a store, one insert per request. */
async function insertBaseline(store: AnalyticStore, account: string): Promise<number> {
  await store.ensureAccount(account);
  const received = Date.now();
  const rowBatches: EventRow[][] = bodies.map((body, b) =>
    (JSON.parse(body) as EventInput[]).map((input, i) => storedEventRow(input, received, `baseline-${b}`, i)),
  );
  const started = now();
  for (const rows of rowBatches)
    await store.write(
      account,
      { identityLinks: [], merges: [], conflicts: [], customers: [], events: rows },
      false,
    );
  return (now() - started) / 1000;
}

interface RawInsert {
  format: string;
  size: number;
  rowsPerSecond: number;
  error?: string;
}

/**
 * The store's own speed now: the same kind of event rows straight into one chDB table, in each format
 * and insert size (a child process: chDB holds one data directory per process); the best of them.
 */
function rawStoreBaseline(): RawInsert {
  const out = execFileSync(
    process.execPath,
    [
      new URL('./store-baseline.js', import.meta.url).pathname,
      '--events',
      String(opt['baseline-events']),
      '--formats',
      String(opt['baseline-formats']),
      '--sizes',
      String(opt['baseline-sizes']),
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const variants = out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as RawInsert)
    .filter((v) => !v.error);
  if (variants.length === 0) throw new Error(`no raw store baseline ran: ${out}`);
  return variants.reduce((a, b) => (b.rowsPerSecond > a.rowsPerSecond ? b : a));
}

/** Sends every body from the worker's clients; calls `onAck` with each 202 as it arrives. */
async function sendAll(
  baseUrl: string,
  key: string,
  onAck: (id: string, ackAt: number, sentAt: number, status: number) => void,
): Promise<void> {
  const worker = new Worker(new URL('./load.worker.js', import.meta.url), {
    workerData: {
      baseUrl,
      key,
      batches,
      batchSize: Number(opt.batch),
      clients: Number(opt.clients),
      seed: Number(opt.seed),
      population: Number(opt.population),
    },
  });
  await new Promise<void>((resolve) => worker.once('message', () => resolve()));
  const done = new Promise<void>((resolve) =>
    worker.on(
      'message',
      (m: { kind: string; status?: number; id?: string; sentAt?: number; ackAt?: number }) => {
        if (m.kind === 'done') resolve();
        if (m.kind === 'ack') onAck(m.id!, m.ackAt!, m.sentAt!, m.status!);
      },
    ),
  );
  worker.postMessage('go');
  await done;
  await worker.terminate();
}

const latencies: number[] = [];
const ackLatencies: number[] = [];
let failures = 0;
let started = 0;
let lastVisible = 0;
let stored = 0;
let insertSeconds = 0;
let publishSeconds: number | undefined;

/** An open console on the account: signs in with the private key and reads its inspector stream. */
async function openInspector(
  baseUrl: string,
  privateKey: string,
): Promise<{ bytes: () => number; close: () => Promise<void> }> {
  const signIn = await fetch(`${baseUrl}/console/api/session`, {
    method: 'POST',
    headers: { 'x-cdp-console': '1', 'content-type': 'application/json' },
    body: JSON.stringify({ private_key: privateKey }),
  });
  if (signIn.status !== 201) throw new Error(`console sign-in failed: ${signIn.status}`);
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
  const abort = new AbortController();
  const stream = await fetch(`${baseUrl}/console/api/inspector/stream`, {
    headers: { cookie },
    signal: abort.signal,
  });
  let bytes = 0;
  const reading = (async () => {
    for await (const chunk of stream.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
  })().catch(() => undefined);
  return {
    bytes: () => bytes,
    close: async () => {
      abort.abort();
      await reading;
    },
  };
}

interface EmbeddedRun {
  latencies: number[];
  ackLatencies: number[];
  failures: number;
  seconds: number;
  stored: number;
  inspectorBytes: number;
  /** The process's peak resident set during the run (sampled with the visibility polls), bytes. */
  peakRss: number;
}

async function runEmbedded(
  port: number,
  store: AnalyticStore,
  accounts: AccountsService,
  inspect: boolean,
): Promise<EmbeddedRun> {
  const run: EmbeddedRun = {
    latencies: [],
    ackLatencies: [],
    failures: 0,
    seconds: 0,
    stored: 0,
    inspectorBytes: 0,
    peakRss: 0,
  };
  const { account, privateKey } = await accounts.create({ name: inspect ? 'bench-inspected' : 'bench' });
  await store.ensureAccount(account.id);
  const inspector = inspect ? await openInspector(`http://127.0.0.1:${port}`, privateKey) : undefined;
  const pending = new Map<string, number>();
  let done = false;
  const started = now();
  let lastVisible = started;
  const sending = sendAll(`http://127.0.0.1:${port}`, account.trackerId, (id, ackAt, sentAt, status) => {
    run.ackLatencies.push(ackAt - sentAt);
    if (status !== 202) run.failures++;
    else pending.set(id, ackAt);
  }).then(() => (done = true));
  while (!done || pending.size > 0) {
    await new Promise((r) => setTimeout(r, 10));
    run.peakRss = Math.max(run.peakRss, process.memoryUsage.rss());
    if (pending.size === 0) continue;
    const seen = await store.query<{ msg_id: string }>(
      account.id,
      'SELECT msg_id FROM {db}.events WHERE msg_id IN {ids:Array(String)} GROUP BY msg_id',
      {
        ids: [...pending.keys()],
      },
    );
    const at = now();
    for (const { msg_id } of seen) {
      run.latencies.push(at - pending.get(msg_id)!);
      pending.delete(msg_id);
      lastVisible = at;
    }
  }
  await sending;
  run.seconds = (lastVisible - started) / 1000;
  run.stored = Number(
    (await store.query<{ n: number }>(account.id, 'SELECT count() AS n FROM {db}.events'))[0]!.n,
  );
  if (inspector) {
    run.inspectorBytes = inspector.bytes();
    await inspector.close();
  }
  return run;
}

const inspectorRows: Row[] = [];
const rawInserts: RawInsert[] = [];
const rowsVsRaw: Row[] = [];
const endToEndRuns: { rate: number; raw: RawInsert; peakRss: number }[] = [];

if (!scaled) {
  const dataDir = mkdtempSync(join(tmpdir(), 'cdp-bench-'));
  const config = loadConfig({ CDP_DATA_DIR: dataDir, LOG_LEVEL: 'warn', PORT: '0' });
  const app = await createCdpApp(config, createLogger('warn'));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.getHttpServer().address() as { port: number };
  const store = app.get(AnalyticStore);
  const accounts = app.get(AccountsService);
  insertSeconds = await insertBaseline(store, (await accounts.create({ name: 'baseline' })).account.id);
  const modes =
    opt.inspector === 'both'
      ? Array.from({ length: Number(opt.rounds) }, () => [false, true]).flat()
      : Array.from({ length: Number(opt.runs) }, () => opt.inspector === 'on');
  const runs: EmbeddedRun[] = [];
  for (const inspect of modes) {
    if (opt.inspector !== 'both') rawInserts.push(rawStoreBaseline());
    runs.push(await runEmbedded(port, store, accounts, inspect));
  }
  if (opt.inspector !== 'both')
    endToEndRuns.push(
      ...runs.map((r, i) => ({ rate: r.stored / r.seconds, raw: rawInserts[i]!, peakRss: r.peakRss })),
    );
  const last = runs.at(-1)!;
  latencies.push(...last.latencies);
  ackLatencies.push(...last.ackLatencies);
  failures = runs.reduce((n, r) => n + r.failures, 0);
  stored = last.stored;
  started = 0;
  lastVisible = last.seconds * 1000;
  if (opt.inspector === 'both') {
    const median = (values: number[]) => {
      const sorted = [...values].sort((a, b) => a - b);
      const mid = Math.floor(sorted.length / 2);
      return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
    };
    const rate = (r: EmbeddedRun) => r.stored / r.seconds;
    const closed = runs.filter((_, i) => !modes[i]);
    const open = runs.filter((_, i) => modes[i]);
    if (runs.some((r) => r.stored !== totalEvents)) failures++;
    const baseline = median(closed.map(rate));
    for (const [name, group] of [
      ['inspector closed', closed],
      ['inspector open (stream read)', open],
    ] as const) {
      inspectorRows.push({
        scenario: `${name}, median of ${group.length}`,
        'events/s': median(group.map(rate)),
        'vs closed': median(group.map(rate)) / baseline,
        'runs events/s': group.map((r) => Math.round(rate(r))).join(' / '),
        'request -> 202 p50 ms': median(
          group.map((r) =>
            percentile(
              [...r.ackLatencies].sort((a, b) => a - b),
              50,
            ),
          ),
        ),
        'stream MB': median(group.map((r) => r.inspectorBytes)) / 1e6,
      });
    }
  }
  await app.close();
} else {
  // Baselines first, while the processes are not running: a direct chDB insert, a JetStream publish.
  const baselineStore = new ClickHouseStore(
    new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-bench-baseline-'))),
  );
  insertSeconds = await insertBaseline(baselineStore, 'baseline');
  await baselineStore.close();
  publishSeconds = await publishBaseline(natsUrl, bodies, Number(opt.clients));

  const prefix = `BENCH${randomBytes(3).toString('hex').toUpperCase()}`;
  const key = `bench${randomBytes(3).toString('hex')}`;
  const env = {
    CDP_NATS_PREFIX: prefix,
    CDP_BOOTSTRAP_PUBLIC_KEY: key,
    CDP_BOOTSTRAP_PRIVATE_KEY: `${key}.secret`,
    NATS_URL: natsUrl,
  };
  const platform = await startScaled(env);
  const backlog = await ingestBacklog(natsUrl, prefix);
  // A 202 is visible once the processor has stored it and acknowledged its message (work-queue
  // stream: acknowledged = gone). Messages are processed in order, so the n-th 202 is visible when n
  // messages have left the stream.
  const acks: number[] = [];
  let done = false;
  started = now();
  lastVisible = started;
  const sending = sendAll(platform.apiUrl, key, (_id, ackAt, sentAt, status) => {
    ackLatencies.push(ackAt - sentAt);
    if (status !== 202) failures++;
    else acks.push(ackAt);
  }).then(() => (done = true));
  let visible = 0;
  while (!done || visible < acks.length) {
    await new Promise((r) => setTimeout(r, 10));
    const { pending, published } = await backlog.read();
    const at = now();
    const processed = Math.min(published - pending, acks.length);
    for (; visible < processed; visible++) latencies.push(at - acks[visible]!);
    if (processed > 0) lastVisible = at;
  }
  await sending;
  await backlog.close();
  await platform.stop();
  await removeTopology(natsUrl, prefix);
  const check = new ClickHouseStore(new ChdbTransport(join(platform.dataDir, 'store', 'chdb')));
  const [db] = await check.query<{ name: string }>(
    'x',
    "SELECT name FROM system.databases WHERE name LIKE 'cdp_%'",
  );
  stored = Number(
    (await check.query<{ n: number }>(db!.name.slice(4), 'SELECT count() AS n FROM {db}.events'))[0]!.n,
  );
  await check.close();
  await removeRedisAccount(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', db!.name.slice(4));
}

const e2eSeconds = (lastVisible - started) / 1000;
latencies.sort((a, b) => a - b);
ackLatencies.sort((a, b) => a - b);
const insertRate = totalEvents / insertSeconds;
const rows: Row[] = [
  {
    scenario: 'JSON.parse of the request bodies',
    events: totalEvents,
    seconds: parseSeconds,
    'events/s': totalEvents / parseSeconds,
    'vs direct insert': totalEvents / parseSeconds / insertRate,
  },
  {
    scenario: 'direct store insert of the same rows',
    events: totalEvents,
    seconds: insertSeconds,
    'events/s': insertRate,
    'vs direct insert': 1,
  },
  ...(publishSeconds === undefined
    ? []
    : [
        {
          scenario: 'JetStream publish of the same bytes',
          events: totalEvents,
          seconds: publishSeconds,
          'events/s': totalEvents / publishSeconds,
          'vs direct insert': totalEvents / publishSeconds / insertRate,
        },
      ]),
  {
    scenario: `end to end, ${opt.clients} clients (202 -> visible)`,
    events: stored,
    seconds: e2eSeconds,
    'events/s': stored / e2eSeconds,
    'vs direct insert': stored / e2eSeconds / insertRate,
  },
];
printTable(`ingest benchmark, wiring ${opt.wiring}: ${batches} batches of ${opt.batch} events`, rows);
if (endToEndRuns.length) {
  const rawRows: Row[] = endToEndRuns.map((r, i) => ({
    run: i + 1,
    'raw store: best format': `${r.raw.format}, ${r.raw.size} rows/insert`,
    'raw rows/s': r.raw.rowsPerSecond,
    'end to end events/s': r.rate,
    'vs raw store': r.rate / r.raw.rowsPerSecond,
    'peak RSS MB': r.peakRss / 1e6,
  }));
  rawRows.push({
    run: `median of ${endToEndRuns.length}`,
    'raw rows/s': median(endToEndRuns.map((r) => r.raw.rowsPerSecond)),
    'end to end events/s': median(endToEndRuns.map((r) => r.rate)),
    'vs raw store': median(endToEndRuns.map((r) => r.rate / r.raw.rowsPerSecond)),
    'peak RSS MB': median(endToEndRuns.map((r) => r.peakRss)) / 1e6,
  });
  rowsVsRaw.push(...rawRows);
  printTable('end to end against the raw store insert of the same run (store-baseline.ts)', rawRows);
}
if (inspectorRows.length)
  printTable('event inspector: the same load without and with an open console', inspectorRows);
printTable('latency (ms)', [
  { measure: 'request -> 202', p50: percentile(ackLatencies, 50), p99: percentile(ackLatencies, 99) },
  {
    measure: scaled
      ? '202 -> stored and acknowledged (polled every 10 ms)'
      : '202 -> visible in the store (polled every 10 ms)',
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  },
]);
const file = writeResults(`ingest-${opt.wiring}`, {
  options: opt,
  rows,
  ...(inspectorRows.length ? { inspector: inspectorRows } : {}),
  ...(rowsVsRaw.length ? { vsRawStore: rowsVsRaw } : {}),
  latency: {
    ack: { p50: percentile(ackLatencies, 50), p99: percentile(ackLatencies, 99) },
    visible: { p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
  },
  failures,
  stored,
  expected: totalEvents,
});
process.stdout.write(
  `\nfailed requests: ${failures}; events stored: ${stored} of ${totalEvents}\nresults: ${file}\n`,
);
if (failures > 0 || stored !== totalEvents) process.exitCode = 1;
