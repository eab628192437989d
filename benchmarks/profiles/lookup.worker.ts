import { parentPort, workerData } from 'node:worker_threads';

/**
 * The clients, on their own thread: `clients` concurrent keep-alive clients (fetch) issue
 * `GET /v3/profiles?email=…` for customers picked at random, for `seconds`, and report every latency.
 */
interface Job {
  baseUrl: string;
  key: string;
  customers: number;
  clients: number;
  seconds: number;
  seed: number;
}

const job = workerData as Job;
let state = job.seed >>> 0;
const next = () => {
  state = (state * 1664525 + 1013904223) >>> 0;
  return state / 2 ** 32;
};

const latencies: number[] = [];
let failures = 0;
const deadline = performance.now() + job.seconds * 1000;

async function client(): Promise<void> {
  while (performance.now() < deadline) {
    const i = Math.floor(next() * job.customers);
    const started = performance.now();
    const res = await fetch(`${job.baseUrl}/v3/profiles?email=p${i}%40bench.example`, {
      headers: { 'x-api-key': job.key },
    });
    await res.arrayBuffer();
    latencies.push(performance.now() - started);
    if (res.status !== 200) failures++;
  }
}

const started = performance.now();
await Promise.all(Array.from({ length: job.clients }, client));
const seconds = (performance.now() - started) / 1000;
parentPort!.postMessage({ latencies, failures, seconds });
