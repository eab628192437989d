import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { AccountsService } from '@cdp/accounts';
import { loadConfig } from '@cdp/config';
import { eventId, normalizeEvent, toStoreTime, type EventInput } from '@cdp/domain';
import { createLogger } from '@cdp/logger';
import { AnalyticStore, type EventRow } from '@cdp/store';
import { createCdpApp } from '../../apps/cdp/src/cdp.app.js';
import { eventBatch, rng } from '../lib/generator.js';
import { args, percentile, printTable, writeResults, type Row } from '../lib/stats.js';

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
});
if (opt.wiring !== 'embedded') throw new Error(`--wiring ${opt.wiring} is not available in this build`);
const batches = Math.ceil(Number(opt.events) / Number(opt.batch));
const now = () => performance.timeOrigin + performance.now();

// The same bodies the clients will send (same seed).
const random = rng(Number(opt.seed));
const bodies = Array.from({ length: batches }, () =>
  JSON.stringify(eventBatch(random, Number(opt.batch), Number(opt.population))),
);
const totalEvents = batches * Number(opt.batch);

// Baseline 1: JSON.parse of the same bytes.
let t = now();
for (const body of bodies) JSON.parse(body);
const parseSeconds = (now() - t) / 1000;

const dataDir = mkdtempSync(join(tmpdir(), 'cdp-bench-'));
const config = loadConfig({ CDP_DATA_DIR: dataDir, LOG_LEVEL: 'warn', PORT: '0' });
const app = await createCdpApp(config, createLogger('warn'));
await app.listen({ port: 0, host: '127.0.0.1' });
const { port } = app.getHttpServer().address() as { port: number };
const store = app.get(AnalyticStore);
const accounts = app.get(AccountsService);

// Baseline 2: the same rows inserted straight into the store, one insert per batch.
const { account: baselineAccount } = await accounts.create({ name: 'baseline' });
await store.ensureAccount(baselineAccount.id);
const received = Date.now();
const rowBatches: EventRow[][] = bodies.map((body, b) =>
  (JSON.parse(body) as EventInput[]).map((input, i) => {
    const e = normalizeEvent(input, received);
    if ('invalidTs' in e) throw new Error('generator made an invalid event');
    const identifiers = Object.fromEntries(Object.entries(e.identifiers).map(([k, v]) => [k, String(v)]));
    return {
      event_id: eventId(`baseline-${b}`, i),
      msg_id: `baseline-${b}`,
      svc_id: `c-${identifiers.vuid}`,
      ts: toStoreTime(e.ts),
      received_at: toStoreTime(received),
      type: e.type,
      action: e.action,
      channel: e.channel,
      identifiers,
      data: e.data,
      order: null,
    };
  }),
);
t = now();
for (const rows of rowBatches)
  await store.write(baselineAccount.id, { identityLinks: [], customers: [], events: rows }, false);
const insertSeconds = (now() - t) / 1000;

// End to end.
const { account } = await accounts.create({ name: 'bench' });
await store.ensureAccount(account.id);
const worker = new Worker(new URL('./load.worker.js', import.meta.url), {
  workerData: {
    baseUrl: `http://127.0.0.1:${port}`,
    key: account.trackerId,
    batches,
    batchSize: Number(opt.batch),
    clients: Number(opt.clients),
    seed: Number(opt.seed),
    population: Number(opt.population),
  },
});
const pending = new Map<string, number>();
const latencies: number[] = [];
const ackLatencies: number[] = [];
let failures = 0;
let done = false;
await new Promise<void>((resolve) => worker.once('message', () => resolve()));
const started = now();
worker.postMessage('go');
worker.on('message', (m: { kind: string; status?: number; id?: string; sentAt?: number; ackAt?: number }) => {
  if (m.kind === 'done') done = true;
  if (m.kind !== 'ack') return;
  if (m.status !== 202) failures++;
  else pending.set(m.id!, m.ackAt!);
  ackLatencies.push(m.ackAt! - m.sentAt!);
});
let lastVisible = started;
while (!done || pending.size > 0) {
  await new Promise((r) => setTimeout(r, 10));
  if (pending.size === 0) continue;
  const ids = [...pending.keys()];
  const seen = await store.query<{ msg_id: string }>(
    account.id,
    'SELECT msg_id FROM {db}.events WHERE msg_id IN {ids:Array(String)} GROUP BY msg_id',
    { ids },
  );
  const at = now();
  for (const { msg_id } of seen) {
    latencies.push(at - pending.get(msg_id)!);
    pending.delete(msg_id);
    lastVisible = at;
  }
}
const e2eSeconds = (lastVisible - started) / 1000;
const stored = Number(
  (await store.query<{ n: number }>(account.id, 'SELECT count() AS n FROM {db}.events'))[0]!.n,
);
await worker.terminate();
await app.close();

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
  {
    scenario: `end to end, ${opt.clients} clients (202 -> visible)`,
    events: stored,
    seconds: e2eSeconds,
    'events/s': stored / e2eSeconds,
    'vs direct insert': stored / e2eSeconds / insertRate,
  },
];
printTable(`ingest benchmark, wiring ${opt.wiring}: ${batches} batches of ${opt.batch} events`, rows);
printTable('latency (ms)', [
  { measure: 'request -> 202', p50: percentile(ackLatencies, 50), p99: percentile(ackLatencies, 99) },
  {
    measure: '202 -> visible in the store (polled every 10 ms)',
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  },
]);
const file = writeResults('ingest', {
  options: opt,
  rows,
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
