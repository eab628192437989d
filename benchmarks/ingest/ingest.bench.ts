import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { ClickHouseStore } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import {
  ingestBacklog,
  publishBaseline,
  redisCpuSeconds,
  removeRedisAccount,
  removeTopology,
} from './scaled.js';
import {
  cpuByThreadKind,
  cpuSeconds,
  machineCpu,
  noThreadCpu,
  peakRss,
  resetPeakRss,
  startEmbedded,
  startScaled,
  threadCpuSeconds,
  type Platform,
  type ThreadKind,
} from './platform.js';
import { eventBatch, rng } from '../lib/generator.js';
import { args, median, percentile, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * `npm run bench:ingest`: 1000-event batches from concurrent clients into the platform, measuring
 * events/s from the first request to the last event visible in the store, and the latency from each
 * 202 to its events being visible.
 *
 * Three kinds of process, so that each figure is the platform's own: the platform under test as its
 * mains run it (embedded: apps/cdp, what `npm start` runs; scaled: apps/api and apps/processor on the
 * machine's NATS and Redis), fresh for each run; the clients on a worker thread of this process; and
 * the store baseline in a child of its own. Peak RSS is each platform process's own high-water mark.
 *
 * Each run: the raw store insert of the same kind of event rows (store-baseline.ts: the best format and
 * insert size, the ceiling), scaled out also a JetStream publish of the same bytes; then the platform at
 * full speed; then, with `--rate`, a paced phase on the same platform (`--rate half`: half the rate
 * that run just reached) for the latency at a load the platform carries.
 */
const opt = args({
  events: 200_000,
  batch: 1000,
  clients: 4,
  seed: 42,
  population: 50_000,
  wiring: 'embedded',
  // `on`: an event inspector is open for the account (a console's stream, read and discarded); `both`: runs
  // without and with it, alternated, and their ratio.
  inspector: 'off',
  // with `--inspector both`: rounds of (closed, open), alternated so that drift on a loaded machine hits both
  rounds: 3,
  // runs without `--inspector both`: each after its own baselines, on a fresh platform; medians reported
  runs: 1,
  // the paced phase after the full-speed one: events/s, `half` (of the run's full-speed rate) or `off`
  rate: 'off',
  'paced-events': 300_000,
  // how often visibility is read (embedded: the count the process reports; scaled: the stream's state)
  'poll-ms': 20,
  // rows per variant of the raw chDB baseline (store-baseline.ts), and its formats and insert sizes
  'baseline-events': 300_000,
  'baseline-formats': 'JSONCompactEachRow,RowBinary (file)',
  'baseline-sizes': '10000,50000',
});
if (!['off', 'on', 'both'].includes(String(opt.inspector))) throw new Error('--inspector is off, on or both');
if (opt.wiring !== 'embedded' && opt.wiring !== 'scaled') throw new Error('--wiring is embedded or scaled');
if (opt.rate !== 'off' && opt.rate !== 'half' && !(Number(opt.rate) > 0))
  throw new Error('--rate is events/s, half or off');
const scaled = opt.wiring === 'scaled';
const batchSize = Number(opt.batch);
const batches = Math.ceil(Number(opt.events) / batchSize);
const totalEvents = batches * batchSize;
const pacedBatches = Math.ceil(Number(opt['paced-events']) / batchSize);
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

// The same bodies the clients will send (same seed), for the bytes-only baselines.
const random = rng(Number(opt.seed));
const bodies = Array.from({ length: batches }, () =>
  JSON.stringify(eventBatch(random, batchSize, Number(opt.population))),
);
const t = now();
for (const body of bodies) JSON.parse(body);
const parseSeconds = (now() - t) / 1000;

interface RawInsert {
  format: string;
  size: number;
  rowsPerSecond: number;
  /** CPU time of the baseline's process (all threads) a stored row. */
  cpuMicrosPerRow: number;
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

/** Sends `count` bodies (generated from `seed`) from the worker's clients; `onAck` sees each answer. */
async function sendAll(
  baseUrl: string,
  key: string,
  count: number,
  seed: number,
  rate: number,
  onAck: (id: string, ackAt: number, sentAt: number, status: number) => void,
): Promise<void> {
  const worker = new Worker(new URL('./load.worker.js', import.meta.url), {
    workerData: {
      baseUrl,
      key,
      batches: count,
      batchSize,
      clients: Number(opt.clients),
      seed,
      population: Number(opt.population),
      rate,
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

/** One phase of load on a running platform. */
interface Phase {
  /** Events visible by the end of the phase (this phase's only). */
  visible: number;
  seconds: number;
  /** Sorted, ms. */
  latencies: number[];
  ackLatencies: number[];
  failures: number;
  /** CPU seconds the platform's processes used in the phase (all their threads). */
  platformCpu: number;
  /** Share of the machine's CPU time that was busy in the phase (all processes, this one's clients too). */
  machineBusy: number;
  /** CPU seconds the whole machine was busy in the phase (NATS, Redis and the clients included). */
  machineCpu: number;
  /** The platform's CPU seconds in the phase by kind of thread (all its processes together). */
  threadCpu: Record<ThreadKind, number>;
  /** Scaled out: CPU seconds the Redis server used in the phase (its INFO; the identity work it does). */
  redisCpu?: number;
}

/**
 * Sends `count` batches and follows their visibility: `visibleEvents` reads how many events the platform
 * has made visible so far. An account's messages are processed in arrival order, so the n-th 202 is
 * visible once n batches are (a batch stored before its 202 reached the client counts as 0 ms).
 */
async function drive(
  platform: Platform,
  key: string,
  visibleEvents: () => Promise<number>,
  count: number,
  seed: number,
  rate: number,
): Promise<Phase> {
  const before = await visibleEvents();
  const acks: number[] = [];
  const phase: Phase = {
    visible: 0,
    seconds: 0,
    latencies: [],
    ackLatencies: [],
    failures: 0,
    platformCpu: 0,
    machineBusy: 0,
    machineCpu: 0,
    threadCpu: noThreadCpu(),
  };
  const platformCpu = () => platform.roles.reduce((sum, r) => sum + cpuSeconds(r.pid), 0);
  const cpuBefore = platformCpu();
  const threads = () => platform.roles.map((r) => threadCpuSeconds(r.pid));
  const threadsBefore = threads();
  const machineBefore = machineCpu();
  const redisBefore = scaled ? await redisCpuSeconds(redisUrl) : 0;
  let done = false;
  const started = now();
  let lastVisible = started;
  let lastProgress = started;
  const sending = sendAll(platform.apiUrl, key, count, seed, rate, (_id, ackAt, sentAt, status) => {
    phase.ackLatencies.push(ackAt - sentAt);
    if (status !== 202) phase.failures++;
    else acks.push(ackAt);
  }).then(() => (done = true));
  let seen = 0;
  while (!done || seen < acks.length) {
    await sleep(Number(opt['poll-ms']));
    const visible = (await visibleEvents()) - before;
    const at = now();
    const batchesVisible = Math.floor(visible / batchSize);
    for (; seen < Math.min(batchesVisible, acks.length); seen++)
      phase.latencies.push(Math.max(0, at - acks[seen]!));
    if (visible > phase.visible) {
      phase.visible = visible;
      lastVisible = at;
      lastProgress = at;
    }
    if (done && at - lastProgress > 120_000) throw new Error('nothing became visible for 2 minutes');
  }
  await sending;
  phase.platformCpu = platformCpu() - cpuBefore;
  if (scaled) phase.redisCpu = (await redisCpuSeconds(redisUrl)) - redisBefore;
  threads().forEach((after, i) => {
    const kinds = cpuByThreadKind(threadsBefore[i]!, after);
    for (const kind of Object.keys(kinds) as ThreadKind[]) phase.threadCpu[kind] += kinds[kind];
  });
  const machineAfter = machineCpu();
  phase.machineCpu = machineAfter.busy - machineBefore.busy;
  phase.machineBusy = phase.machineCpu / (machineAfter.total - machineBefore.total);
  phase.seconds = (lastVisible - started) / 1000;
  phase.latencies.sort((a, b) => a - b);
  phase.ackLatencies.sort((a, b) => a - b);
  return phase;
}

interface Run {
  inspect: boolean;
  raw?: RawInsert;
  publishRate?: number;
  full: Phase;
  /** Peak RSS of each platform process during the full-speed phase (start included), bytes. */
  peakRss: Record<string, number>;
  paced?: Phase & { asked: number; peakRss: Record<string, number> };
  stored: number;
  inspectorBytes: number;
  load: number;
}

const rateOf = (p: Phase) => p.visible / p.seconds;

/** A fresh platform, its baselines first, a full-speed phase and maybe a paced one; then its events counted. */
async function oneRun(inspect: boolean, withBaselines: boolean): Promise<Run> {
  const raw = withBaselines ? rawStoreBaseline() : undefined;
  const publishRate =
    scaled && withBaselines
      ? totalEvents / (await publishBaseline(natsUrl, bodies, Number(opt.clients)))
      : undefined;
  const key = `bench${randomBytes(3).toString('hex')}`;
  const privateKey = `${key}.${randomBytes(16).toString('hex')}`;
  const prefix = `BENCH${randomBytes(3).toString('hex').toUpperCase()}`;
  const env = { CDP_BOOTSTRAP_PUBLIC_KEY: key, CDP_BOOTSTRAP_PRIVATE_KEY: privateKey };
  const platform = scaled
    ? await startScaled({ ...env, CDP_NATS_PREFIX: prefix, NATS_URL: natsUrl, REDIS_URL: redisUrl })
    : await startEmbedded(env);
  const backlog = scaled ? await ingestBacklog(natsUrl, prefix) : undefined;
  // Scaled out, a message is visible once the processor stored it and acknowledged it (work-queue
  // stream: acknowledged = gone); embedded, by the process's own count of stored records.
  const visibleEvents = backlog
    ? async () => {
        const { pending, published } = await backlog.read();
        return (published - pending) * batchSize;
      }
    : () => Promise.resolve(platform.storedEvents!());
  try {
    const inspector = inspect ? await openInspector(platform.apiUrl, privateKey) : undefined;
    const full = await drive(platform, key, visibleEvents, batches, Number(opt.seed), 0);
    const peak = Object.fromEntries(platform.roles.map((r) => [r.role, peakRss(r.pid)]));
    const asked = opt.rate === 'off' ? 0 : opt.rate === 'half' ? rateOf(full) / 2 : Number(opt.rate);
    // The paced phase's own peak: from the RSS it starts with (what the full-speed phase left).
    for (const r of platform.roles) resetPeakRss(r.pid);
    const paced = asked
      ? {
          ...(await drive(platform, key, visibleEvents, pacedBatches, Number(opt.seed) + 1, asked)),
          asked,
          peakRss: Object.fromEntries(platform.roles.map((r) => [r.role, peakRss(r.pid)])),
        }
      : undefined;
    const inspectorBytes = inspector?.bytes() ?? 0;
    await inspector?.close();
    const load = loadavg()[0]!;
    await backlog?.close();
    await platform.stop();
    return {
      inspect,
      raw,
      publishRate,
      full,
      peakRss: peak,
      paced,
      stored: await storedEvents(platform.dataDir),
      inspectorBytes,
      load,
    };
  } finally {
    await platform.stop();
    if (scaled) await removeTopology(natsUrl, prefix);
    rmSync(platform.dataDir, { recursive: true, force: true });
  }
}

/** Events in the stopped platform's store (its one account's database), and its Redis keys removed. */
async function storedEvents(dataDir: string): Promise<number> {
  const check = new ClickHouseStore(new ChdbTransport(join(dataDir, 'store', 'chdb')));
  try {
    const [db] = await check.query<{ name: string }>(
      'x',
      "SELECT name FROM system.databases WHERE name LIKE 'cdp_%'",
    );
    const account = db!.name.slice(4);
    if (scaled) await removeRedisAccount(redisUrl, account);
    return Number((await check.query<{ n: number }>(account, 'SELECT count() AS n FROM {db}.events'))[0]!.n);
  } finally {
    await check.close();
  }
}

const modes =
  opt.inspector === 'both'
    ? Array.from({ length: Number(opt.rounds) }, () => [false, true]).flat()
    : Array.from({ length: Number(opt.runs) }, () => opt.inspector === 'on');
const runs: Run[] = [];
for (const inspect of modes) runs.push(await oneRun(inspect, opt.inspector !== 'both'));

const mb = (bytes: number) => bytes / 1e6;
const p = (sorted: number[], q: number) => percentile(sorted, q);
const expectedPaced = opt.rate === 'off' ? 0 : pacedBatches * batchSize;
const failures = runs.reduce((n, r) => n + r.full.failures + (r.paced?.failures ?? 0), 0);
const lost = runs.filter((r) => r.stored !== totalEvents + expectedPaced).length;

printTable(`ingest benchmark, wiring ${opt.wiring}: ${batches} batches of ${batchSize} events`, [
  {
    scenario: 'JSON.parse of the request bodies (this process)',
    events: totalEvents,
    'events/s': totalEvents / parseSeconds,
  },
]);

const roles = Object.keys(runs[0]!.peakRss);
const perRun: Row[] = runs.map((r, i) => ({
  run: `${i + 1}${r.inspect ? ' (inspector open)' : ''}`,
  'load avg': r.load,
  ...(r.raw
    ? { 'raw store: best': `${r.raw.format}, ${r.raw.size}/insert`, 'raw rows/s': r.raw.rowsPerSecond }
    : {}),
  ...(r.publishRate ? { 'JetStream publish ev/s': r.publishRate } : {}),
  'end to end ev/s': rateOf(r.full),
  ...(r.raw ? { 'vs raw store': rateOf(r.full) / r.raw.rowsPerSecond } : {}),
  ...(r.publishRate ? { 'vs publish': rateOf(r.full) / r.publishRate } : {}),
  // CPU a event: what bounds the rate on a machine of 2 cores, whatever else runs beside it
  'platform CPU µs/event': (r.full.platformCpu * 1e6) / r.full.visible,
  // scaled out, the identity work Redis does for the platform (the single-tag index resolves in Redis)
  ...(r.full.redisCpu !== undefined
    ? {
        'Redis CPU µs/event': (r.full.redisCpu * 1e6) / r.full.visible,
        'platform + Redis CPU µs/event': ((r.full.platformCpu + r.full.redisCpu) * 1e6) / r.full.visible,
      }
    : {}),
  // the same by kind of thread (docs/benchmarks.md "Ingest CPU an event")
  ...Object.fromEntries(
    Object.entries(r.full.threadCpu).map(([kind, seconds]) => [
      `µs/event ${kind}`,
      (seconds * 1e6) / r.full.visible,
    ]),
  ),
  ...(r.raw ? { 'raw store CPU µs/row': r.raw.cpuMicrosPerRow } : {}),
  'machine CPU µs/event': (r.full.machineCpu * 1e6) / r.full.visible,
  'machine busy': r.full.machineBusy,
  ...Object.fromEntries(roles.map((role) => [`peak RSS MB ${role}`, mb(r.peakRss[role]!)])),
  '202->visible p50 ms': p(r.full.latencies, 50),
  '202->visible p99 ms': p(r.full.latencies, 99),
  ...(r.paced
    ? {
        'paced: asked ev/s': r.paced.asked,
        'paced: got ev/s': rateOf(r.paced),
        'paced: p50 ms': p(r.paced.latencies, 50),
        'paced: p99 ms': p(r.paced.latencies, 99),
        ...Object.fromEntries(
          roles.map((role) => [`paced: peak RSS MB ${role}`, mb(r.paced!.peakRss[role]!)]),
        ),
      }
    : {}),
}));
const columnMedian = (rows: Row[], column: string): number | undefined => {
  const values = rows.map((r) => r[column]).filter((v): v is number => typeof v === 'number');
  return values.length ? median(values) : undefined;
};
const summarize = (label: string, rows: Row[]): Row => {
  const out: Row = { run: label };
  for (const column of Object.keys(rows[0] ?? {})) {
    const m = columnMedian(rows, column);
    if (m !== undefined && column !== 'run') out[column] = m;
  }
  return out;
};
const inspectorRows: Row[] = [];
if (opt.inspector === 'both') {
  const closed = perRun.filter((_, i) => !runs[i]!.inspect);
  const open = perRun.filter((_, i) => runs[i]!.inspect);
  const baseline = columnMedian(closed, 'end to end ev/s')!;
  for (const [name, group] of [
    ['inspector closed', closed],
    ['inspector open (stream read)', open],
  ] as const) {
    const m = summarize(`${name}, median of ${group.length}`, group);
    inspectorRows.push({ ...m, 'vs closed': Number(m['end to end ev/s']) / baseline });
  }
  inspectorRows.push({
    run: 'stream MB, median',
    'end to end ev/s': median(runs.filter((r) => r.inspect).map((r) => r.inspectorBytes)) / 1e6,
  });
}
const table = [...perRun, summarize(`median of ${runs.length}`, perRun)];
printTable(
  `per run (fresh platform each; ${opt.clients} clients; paced phase: ${pacedBatches} batches at --rate ${opt.rate})`,
  table,
);
if (inspectorRows.length)
  printTable('event inspector: the same load without and with an open console', inspectorRows);
printTable('request -> 202, ms (last run, full speed)', [
  { p50: p(runs.at(-1)!.full.ackLatencies, 50), p99: p(runs.at(-1)!.full.ackLatencies, 99) },
]);
const file = writeResults(`ingest-${opt.wiring}`, {
  options: opt,
  parse: { events: totalEvents, seconds: parseSeconds },
  runs: table,
  ...(inspectorRows.length ? { inspector: inspectorRows } : {}),
  failures,
  stored: runs.map((r) => r.stored),
  expected: totalEvents + expectedPaced,
});
process.stdout.write(
  `\nfailed requests: ${failures}; events stored per run: ${runs.map((r) => r.stored).join(', ')} ` +
    `of ${totalEvents + expectedPaced}\nresults: ${file}\n`,
);
if (failures > 0 || lost > 0) process.exitCode = 1;
