import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { cpuSeconds, startScaled } from '../ingest/platform.js';
import { ingestBacklog, removeTopology } from '../ingest/scaled.js';
import { freePort } from '../lib/free-port.js';
import { startRedis } from '../lib/private-redis.js';
import { args, median, percentile, printTable, writeResults } from '../lib/stats.js';
import { WORKLOAD_OPTIONS, createSegments, lookupLoad, sendEvents, subsetOf } from './workload.js';

/**
 * `npm run bench:segments:scaled`: the SDKs' audience lookup on the scaled-out wiring, as it is deployed —
 * the API (which parses and executes the GraphQL) and the processor (which owns the chDB store and its
 * event digests, and answers the API's count requests over NATS) as processes of their own, on the
 * machine's NATS and a private Redis; the clients on a thread of the bench. After `events` events over
 * `customers` customers and `segments` segments, `rounds` times: the closed loop at `concurrency` for the
 * peak (with the API's and the processor's CPU per lookup), then the open loop at half of it for the
 * percentiles. Medians of the rounds.
 */
const opt = args(WORKLOAD_OPTIONS);
const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const publicKey = `bench${randomBytes(3).toString('hex')}`;
const privateKey = `${publicKey}.${randomBytes(16).toString('hex')}`;
const prefix = `BENCH${randomBytes(3).toString('hex').toUpperCase()}`;
const redisPort = await freePort();
const redis = await startRedis(redisPort);
const platform = await startScaled({
  CDP_BOOTSTRAP_PUBLIC_KEY: publicKey,
  CDP_BOOTSTRAP_PRIVATE_KEY: privateKey,
  CDP_NATS_PREFIX: prefix,
  NATS_URL: natsUrl,
  REDIS_URL: `redis://127.0.0.1:${redisPort}`,
});

interface Round {
  peak: number;
  rate: number;
  p50: number;
  p99: number;
  n: number;
  /** CPU per lookup in the closed loop, ms, by role. */
  apiCpuMs: number;
  processorCpuMs: number;
}

try {
  const url = platform.apiUrl;
  const segments = Number(opt.segments);
  const customers = Number(opt.customers);
  await createSegments(url, privateKey, segments);
  const total = Number(opt.events);
  for (let sent = 0; sent < total; sent += 1000)
    await sendEvents(url, publicKey, customers, sent, Math.min(1000, total - sent));
  // Stored: every message of the ingest stream acknowledged by the processor.
  const backlog = await ingestBacklog(natsUrl, prefix);
  for (;;) {
    const { pending, published } = await backlog.read();
    if (pending === 0 && published >= Math.ceil(total / 1000)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await backlog.close();

  const job = { url, key: publicKey, customers, subset: subsetOf(segments) };
  // Warm-up: the account's first lookups start its digests' build in the processor (answered by the
  // store query meanwhile), and warm both processes' code.
  await lookupLoad({ ...job, seconds: 5, concurrency: 2 });
  const [api, processor] = platform.roles;
  const rounds: Round[] = [];
  for (let r = 0; r < Number(opt.rounds); r++) {
    const seconds = Number(opt.seconds);
    let apiCpu = 0;
    let processorCpu = 0;
    const closed = await lookupLoad({ ...job, seconds, concurrency: Number(opt.concurrency) }, () => {
      apiCpu = cpuSeconds(api!.pid);
      processorCpu = cpuSeconds(processor!.pid);
    });
    const done = closed.latencies.length;
    const apiCpuMs = ((cpuSeconds(api!.pid) - apiCpu) * 1000) / done;
    const processorCpuMs = ((cpuSeconds(processor!.pid) - processorCpu) * 1000) / done;
    const peak = done / closed.seconds;
    const { latencies } = await lookupLoad({ ...job, seconds, rate: peak / 2 });
    rounds.push({
      peak,
      rate: peak / 2,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      n: latencies.length,
      apiCpuMs,
      processorCpuMs,
    });
  }
  const med = (pick: (r: Round) => number) => median(rounds.map(pick));
  printTable(`GraphQL audience lookup, scaled out (median of ${rounds.length})`, [
    {
      'peak/s': med((r) => r.peak),
      'rate/s': med((r) => r.rate),
      'p50 ms': med((r) => r.p50),
      'p99 ms': med((r) => r.p99),
      n: med((r) => r.n),
      'api cpu ms/lookup': med((r) => r.apiCpuMs),
      'processor cpu ms/lookup': med((r) => r.processorCpuMs),
    },
  ]);
  process.stdout.write(
    `load average: ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}\n`,
  );
  process.stdout.write(
    `results: ${writeResults('segments-scaled', { opt, rounds, loadAverage: loadavg() })}\n`,
  );
} finally {
  await platform.stop();
  await removeTopology(natsUrl, prefix);
  await redis.stop();
  rmSync(platform.dataDir, { recursive: true, force: true });
}
