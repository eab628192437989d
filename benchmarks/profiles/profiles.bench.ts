import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import Fastify from 'fastify';
import { AccountsService } from '@cdp/accounts';
import { loadConfig } from '@cdp/config';
import { createLogger } from '@cdp/logger';
import { createCdpApp } from '../../apps/cdp/src/cdp.app.js';
import { args, percentile, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * `npm run bench:profiles`: `GET /v3/profiles` by email from many concurrent clients (a worker
 * thread) over a store of `customers` profiles, beside a bare Fastify route answering the same JSON
 * from a Map, in the same process, in the same run. The account's profiles rate limit is lifted
 * through the admin API first: the benchmark measures the lookup, not the limiter's 429s.
 */
const opt = args({ customers: 100_000, clients: 64, seconds: 10, seed: 7, rounds: 3 });
const customers = Number(opt.customers);
const ADMIN = 'bench-admin';

const profileOf = (i: number) => ({
  email: `p${i}@bench.example`,
  customer_id: `cust-${i}`,
  first_name: `First${i}`,
  last_name: `Last${i}`,
  city: ['Oslo', 'Rome', 'Lima', 'Pune'][i % 4]!,
  country: ['NOR', 'ITA', 'PER', 'IND'][i % 4]!,
  phone: `+1 555 ${String(i).padStart(7, '0')}`,
});

const config = loadConfig({
  CDP_DATA_DIR: mkdtempSync(join(tmpdir(), 'cdp-bench-profiles-')),
  CDP_ADMIN_TOKEN: ADMIN,
  LOG_LEVEL: 'warn',
  PORT: '0',
});
const app = await createCdpApp(config, createLogger('warn'));
await app.listen({ port: 0, host: '127.0.0.1' });
const cdpUrl = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
const { account, privateKey } = await app.get(AccountsService).create({ name: 'bench' });
const limits = await fetch(`${cdpUrl}/admin/v1/accounts/${account.id}/rate-limits`, {
  method: 'PATCH',
  headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
  body: JSON.stringify({ profiles: 'unlimited' }),
});
if (!limits.ok) throw new Error(`could not lift the rate limit: ${limits.status} ${await limits.text()}`);

// Load the customers through the API, then wait until the last one is readable.
const loadStarted = performance.now();
for (let from = 0; from < customers; from += 1000) {
  const body = Array.from({ length: Math.min(1000, customers - from) }, (_, k) => ({
    attributes: profileOf(from + k),
  }));
  const res = await fetch(`${cdpUrl}/v3/profiles`, {
    method: 'POST',
    headers: { 'x-api-key': account.trackerId, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 202) throw new Error(`loading profiles: ${res.status} ${await res.text()}`);
}
const last = `${cdpUrl}/v3/profiles?email=p${customers - 1}%40bench.example`;
while ((await fetch(last, { headers: { 'x-api-key': privateKey } })).status !== 200) {
  await new Promise((r) => setTimeout(r, 50));
}
const loadSeconds = (performance.now() - loadStarted) / 1000;

// The bare route: the same JSON bodies, from a Map, no authentication, no identity lookup.
const bodies = new Map<string, { attributes: Record<string, string> }>();
for (let i = 0; i < customers; i++) {
  const p = profileOf(i);
  bodies.set(p.email, { attributes: { ...p, name: `${p.first_name} ${p.last_name}` } });
}
const bare = Fastify({ logger: false });
bare.get('/v3/profiles', (req, reply) => {
  const body = bodies.get((req.query as { email: string }).email);
  return body ?? reply.code(404).send({ title: 'Not Found', status: 404 });
});
await bare.listen({ port: 0, host: '127.0.0.1' });
const bareUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}`;

// The two answers must be the same JSON, or the comparison would mean nothing.
const probe = async (url: string) =>
  (
    await fetch(`${url}/v3/profiles?email=p1%40bench.example`, { headers: { 'x-api-key': privateKey } })
  ).json();
if (JSON.stringify(await probe(cdpUrl)) !== JSON.stringify(await probe(bareUrl)))
  throw new Error(`the bare route answers differently: ${JSON.stringify(await probe(bareUrl))}`);

interface Run {
  latencies: number[];
  failures: number;
  seconds: number;
}
function load(baseUrl: string, seed: number): Promise<Run> {
  const worker = new Worker(new URL('./lookup.worker.js', import.meta.url), {
    workerData: {
      baseUrl,
      key: privateKey,
      customers,
      clients: Number(opt.clients),
      seconds: Number(opt.seconds),
      seed,
    },
  });
  return new Promise((resolve, reject) => {
    worker.once('message', (run: Run) => void worker.terminate().then(() => resolve(run)));
    worker.once('error', reject);
  });
}

// Alternate the two targets, so that drift of the machine affects both alike.
const results: Record<'bare' | 'cdp', { rate: number; p50: number; p99: number; failures: number }[]> = {
  bare: [],
  cdp: [],
};
for (let round = 0; round < Number(opt.rounds); round++) {
  for (const [name, url] of [
    ['bare', bareUrl],
    ['cdp', cdpUrl],
  ] as const) {
    const run = await load(url, Number(opt.seed) + round);
    const sorted = run.latencies.sort((a, b) => a - b);
    results[name].push({
      rate: sorted.length / run.seconds,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      failures: run.failures,
    });
  }
}
await bare.close();
await app.close();

const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const summary = (name: 'bare' | 'cdp') => ({
  rate: med(results[name].map((r) => r.rate)),
  p50: med(results[name].map((r) => r.p50)),
  p99: med(results[name].map((r) => r.p99)),
  failures: results[name].reduce((n, r) => n + r.failures, 0),
});
const b = summary('bare');
const c = summary('cdp');
const rows: Row[] = [
  {
    target: 'bare Fastify route, same JSON',
    'req/s': b.rate,
    'p50 ms': b.p50,
    'p99 ms': b.p99,
    failures: b.failures,
    'vs bare': 1,
  },
  {
    target: 'GET /v3/profiles (auth, identity lookup, hot profile)',
    'req/s': c.rate,
    'p50 ms': c.p50,
    'p99 ms': c.p99,
    failures: c.failures,
    'vs bare': c.rate / b.rate,
  },
];
printTable(
  `profiles benchmark: ${customers} customers (loaded in ${loadSeconds.toFixed(1)} s), ${opt.clients} clients, median of ${opt.rounds} rounds of ${opt.seconds} s`,
  rows,
);
const file = writeResults('profiles', {
  options: opt,
  loadSeconds,
  runs: results,
  bare: b,
  cdp: c,
  ratio: c.rate / b.rate,
});
process.stdout.write(
  `\ntarget: at least 0.5 of the bare route; measured ${(c.rate / b.rate).toFixed(2)}\nresults: ${file}\n`,
);
