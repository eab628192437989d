import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import Fastify from 'fastify';
import { AccountsService } from '@cdp/accounts';
import { loadConfig } from '@cdp/config';
import { createLogger } from '@cdp/logger';
import { AnalyticStore } from '@cdp/store';
import { createCdpApp } from '../../apps/cdp/src/cdp.app.js';
import { rng } from '../lib/generator.js';
import { args, median, percentile, printTable, writeResults, type Row } from '../lib/stats.js';
import { generateShop, historyEvents, type Customer } from './shop.generator.js';

/**
 * `npm run bench:recs`: the recommender against a best-sellers baseline on a seeded synthetic shop,
 * then its latency at a fixed request rate beside a bare Fastify route answering the same JSON, in
 * the same process, in the same run (the `bench:profiles` pattern).
 *
 * Quality: every customer's last purchase is held out of what is sent; for the test customers, a hit
 * is the held-out product among the 10 recommended (hit rate@10), ranked by NDCG@10. The baseline is
 * the platform's own best sellers of the last 7 days (what a customer nobody knows gets) without the
 * customer's purchases — the same exclusions ours applies.
 *
 * Latency: open-loop load at `rate` requests/s from a worker thread, alternating the bare route and
 * ours, `rounds` rounds of `seconds` each, medians reported. The sampled customers were all asked once
 * before (to record the bare route's answers), so ours answers from memory; a third run per round asks
 * about customers never asked before. Their histories were read ahead when the process first saw the
 * account (its most recently active customers, within half the histories' bound: all 10 000 here), so
 * that run shows the first request of a customer the process holds, not a read from the store.
 */
const opt = args({
  products: 5000,
  customers: 10_000,
  test: 1000,
  seed: 11,
  rate: 100,
  seconds: 15,
  rounds: 3,
  sample: 2000,
});
const K = 10;

const shop = generateShop({
  products: Number(opt.products),
  customers: Number(opt.customers),
  seed: Number(opt.seed),
  minPurchases: 4,
});

const config = loadConfig({
  CDP_DATA_DIR: mkdtempSync(join(tmpdir(), 'cdp-bench-recs-')),
  CDP_ADMIN_TOKEN: 'bench-admin',
  LOG_LEVEL: 'warn',
  PORT: '0',
});
const app = await createCdpApp(config, createLogger('warn'));
await app.listen({ port: 0, host: '127.0.0.1' });
const cdpUrl = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
const { account } = await app.get(AccountsService).create({ name: 'bench-recs' });
const key = account.trackerId; // the public key: recommendations serve web pages
const store = app.get(AnalyticStore);

async function post(path: string, body: unknown[]): Promise<void> {
  const res = await fetch(`${cdpUrl}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 202) throw new Error(`${path}: ${res.status} ${await res.text()}`);
}

// Load: the catalogue, then every customer's history (held-out purchases left out), 1000 records a request.
const loadStarted = performance.now();
let messages = 0;
for (let from = 0; from < shop.products.length; from += 1000) {
  await post('/v3/objects/products', shop.products.slice(from, from + 1000));
  messages++;
}
const events = shop.customers.flatMap((c, i) => historyEvents(c, `o${i}`));
const batches: unknown[][] = [];
for (let from = 0; from < events.length; from += 1000) batches.push(events.slice(from, from + 1000));
for (let i = 0; i < batches.length; i += 4) {
  await Promise.all(batches.slice(i, i + 4).map((b) => post('/v3/events', b)));
  messages += Math.min(4, batches.length - i);
}
// Until every message is stored and taken in by a finished refresh generation.
for (;;) {
  const [r] = await store
    .query<{ committed: number; taken: number; gens: number; done: number }>(
      account.id,
      `SELECT (SELECT countDistinct(msg_id) FROM {db}.ingest_commits WHERE done = 1) AS committed,
            (SELECT count() FROM {db}.rec_messages) AS taken,
            (SELECT countDistinct(gen) FROM {db}.rec_messages) AS gens,
            (SELECT countDistinct(gen) FROM {db}.rec_generations) AS done`,
    )
    .catch(() => [undefined]);
  if (
    r &&
    Number(r.committed) === messages &&
    Number(r.taken) === messages &&
    Number(r.gens) === Number(r.done)
  )
    break;
  await new Promise((resolve) => setTimeout(resolve, 200));
}
const loadSeconds = (performance.now() - loadStarted) / 1000;

type Answer = { product_id: string; recommendation_type: string }[];
async function recommend(query: string): Promise<Answer> {
  const res = await fetch(`${cdpUrl}/v3/recommendations/products?${query}`, {
    headers: { 'x-api-key': key },
  });
  if (res.status !== 200) throw new Error(`recommendations: ${res.status} ${await res.text()}`);
  return (await res.json()) as Answer;
}
const emailQuery = (c: Customer) => `email=${encodeURIComponent(c.email)}&limit=${K}`;

// Quality.
const bestSellers = (await recommend('email=nobody%40shop.example&limit=100')).map((p) => p.product_id);
const testCustomers = shop.customers.slice(0, Number(opt.test));
const gain = (list: string[], target: string) => {
  const rank = list.indexOf(target);
  return rank === -1 ? { hit: 0, ndcg: 0 } : { hit: 1, ndcg: 1 / Math.log2(rank + 2) };
};
const score = { ours: { hit: 0, ndcg: 0 }, baseline: { hit: 0, ndcg: 0 } };
const types: Record<string, number> = {};
for (let i = 0; i < testCustomers.length; i += 8) {
  await Promise.all(
    testCustomers.slice(i, i + 8).map(async (c) => {
      const answer = await recommend(emailQuery(c));
      for (const p of answer) types[p.recommendation_type] = (types[p.recommendation_type] ?? 0) + 1;
      const ours = gain(
        answer.map((p) => p.product_id),
        c.heldOut,
      );
      const bought = new Set(c.history.filter((h) => h.action === 'purchase').map((h) => h.product));
      const base = gain(bestSellers.filter((p) => !bought.has(p)).slice(0, K), c.heldOut);
      score.ours.hit += ours.hit;
      score.ours.ndcg += ours.ndcg;
      score.baseline.hit += base.hit;
      score.baseline.ndcg += base.ndcg;
    }),
  );
}
const n = testCustomers.length;
const quality = {
  ours: { hitRate: score.ours.hit / n, ndcg: score.ours.ndcg / n },
  baseline: { hitRate: score.baseline.hit / n, ndcg: score.baseline.ndcg / n },
};

// Latency: a sample of customers (a fifth of the requests with one of their products as the page's),
// the answers recorded first so that the bare route serves exactly the same JSON.
const random = rng(Number(opt.seed) + 1);
const queries: string[] = [];
for (let i = 0; i < Number(opt.sample); i++) {
  const c = shop.customers[Math.floor(random() * shop.customers.length)]!;
  const context = random() < 0.2 ? `&product_ids=${c.history[0]!.product}` : '';
  queries.push(`${emailQuery(c)}${context}`);
}
// Customers never asked about before: their histories were read ahead (see above) unless the read-ahead
// had not reached them yet; the related lists and records of their products may already be in memory, as
// in a shop running for a while. Each round gets its own; when they run out, the list wraps and those are
// counted.
const asked = new Set([
  ...testCustomers.map((c) => c.email),
  ...queries.map((q) => q.slice(0, q.indexOf('&'))),
]);
const coldPool = shop.customers.filter((c) => !asked.has(`email=${encodeURIComponent(c.email)}`));
const perRound = Number(opt.rate) * Number(opt.seconds);
const bodies = new Map<string, string>();
for (let i = 0; i < queries.length; i += 8) {
  await Promise.all(
    queries.slice(i, i + 8).map(async (q) => bodies.set(q, JSON.stringify(await recommend(q)))),
  );
}
const bare = Fastify({ logger: false });
bare.get('/v3/recommendations/products', (req, reply) => {
  const q = req.url.slice(req.url.indexOf('?') + 1);
  return reply.type('application/json').send(bodies.get(q) ?? '[]');
});
await bare.listen({ port: 0, host: '127.0.0.1' });
const bareUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}`;

interface Run {
  latencies: number[];
  failures: number;
  seconds: number;
}
function load(baseUrl: string, list = queries): Promise<Run> {
  const worker = new Worker(new URL('./rate.worker.js', import.meta.url), {
    workerData: { baseUrl, key, queries: list, rate: Number(opt.rate), seconds: Number(opt.seconds) },
  });
  return new Promise((resolve, reject) => {
    worker.once('message', (run: Run) => void worker.terminate().then(() => resolve(run)));
    worker.once('error', reject);
  });
}
type Target = 'bare' | 'cdp' | 'cold';
const runs: Record<Target, { p50: number; p99: number; failures: number }[]> = {
  bare: [],
  cdp: [],
  cold: [],
};
let coldCustomers = 0;
for (let round = 0; round < Number(opt.rounds); round++) {
  const cold = coldPool.slice(round * perRound, (round + 1) * perRound);
  coldCustomers += cold.length;
  for (const [name, url, list] of [
    ['bare', bareUrl, queries],
    ['cdp', cdpUrl, queries],
    ['cold', cdpUrl, cold.length ? cold.map(emailQuery) : queries],
  ] as const) {
    const run = await load(url, list);
    const sorted = run.latencies.sort((a, b) => a - b);
    runs[name].push({ p50: percentile(sorted, 50), p99: percentile(sorted, 99), failures: run.failures });
  }
}
await bare.close();
await app.close();

const summary = (name: Target) => ({
  p50: median(runs[name].map((r) => r.p50)),
  p99: median(runs[name].map((r) => r.p99)),
  failures: runs[name].reduce((s, r) => s + r.failures, 0),
});
const b = summary('bare');
const c = summary('cdp');
const cold = summary('cold');
printTable(
  `recommendation quality: ${shop.products.length} products, ${shop.customers.length} customers (${events.length} events, loaded and refreshed in ${loadSeconds.toFixed(1)} s), ${n} test customers, last purchase held out`,
  [
    {
      recommender: 'best sellers (7 days, minus own purchases)',
      'hit rate@10': quality.baseline.hitRate,
      'NDCG@10': quality.baseline.ndcg,
      'vs baseline': 1,
    },
    {
      recommender: 'ours (GET /v3/recommendations/products)',
      'hit rate@10': quality.ours.hitRate,
      'NDCG@10': quality.ours.ndcg,
      'vs baseline': quality.ours.hitRate / quality.baseline.hitRate,
    },
  ] satisfies Row[],
);
printTable(
  `latency at ${opt.rate} requests/s (open loop, ${opt.sample} sampled customers), median of ${opt.rounds} rounds of ${opt.seconds} s`,
  [
    { target: 'bare Fastify route, same JSON', 'p50 ms': b.p50, 'p99 ms': b.p99, failures: b.failures },
    {
      target: 'GET /v3/recommendations/products',
      'p50 ms': c.p50,
      'p99 ms': c.p99,
      failures: c.failures,
      'p50 vs bare': c.p50 / b.p50,
      'p99 vs bare': c.p99 / b.p99,
    },
    {
      target: `  each customer's first request (${coldCustomers} of ${Number(opt.rounds) * perRound})`,
      'p50 ms': cold.p50,
      'p99 ms': cold.p99,
      failures: cold.failures,
      'p50 vs bare': cold.p50 / b.p50,
      'p99 vs bare': cold.p99 / b.p99,
    },
  ],
);
const file = writeResults('recs', {
  options: opt,
  loadSeconds,
  quality,
  types,
  runs,
  bare: b,
  cdp: c,
  cold: { ...cold, customers: coldCustomers },
});
process.stdout.write(
  `\ntargets: hit rate@10 at least 2x the baseline (measured ${(quality.ours.hitRate / quality.baseline.hitRate).toFixed(2)}x); p99 at most 25 ms (measured ${c.p99.toFixed(1)} ms, ${(c.p99 / b.p99).toFixed(2)}x the bare route's ${b.p99.toFixed(1)} ms; first requests ${cold.p99.toFixed(1)} ms)\nresults: ${file}\n`,
);
