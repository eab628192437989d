import { Worker } from 'node:worker_threads';
import type { LookupJob } from './lookup.worker.js';

/**
 * What both segment benchmarks (embedded: segments.bench.ts; scaled out: scaled-lookups.bench.ts) send:
 * the segments, the events and the SDKs' audience lookups.
 */

/** Both benchmarks' options and their defaults (`--customers 2000 --seconds 5` …). */
export const WORKLOAD_OPTIONS = {
  customers: 20_000,
  events: 20_000,
  segments: 20,
  concurrency: 8,
  seconds: 10,
  rounds: 3,
};

const DAY = 86_400_000;
const TYPES = [
  ['product', 'view'],
  ['product', 'add_to_cart'],
  ['page', 'view'],
] as const;

export async function post(url: string, path: string, key: string, body: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** The event condition of bench segment `s`: add-to-carts in the last 1 + s days, at least 1 + s % 3. */
export function condition(s: number) {
  return { type: 'product', action: 'add_to_cart', within_days: 1 + s, min_count: 1 + (s % 3) };
}

/** Creates segments `segment_0`…: each odd one also filters on the email. */
export async function createSegments(url: string, privateKey: string, count: number): Promise<void> {
  for (let s = 0; s < count; s++) {
    const res = await post(url, '/v3/segments', privateKey, {
      id: `segment_${s}`,
      name: `Segment ${s}`,
      definition: {
        ...(s % 2 ? { customer: { field: 'email', operator: 'like', value: `%${s}%` } } : {}),
        events: [condition(s)],
      },
    });
    if (res.status !== 201) throw new Error(`segment: ${res.status} ${await res.text()}`);
  }
}

/** Sends events `from`… of the sequence (customers in turn, three kinds, up to 9 days old) in one request. */
export async function sendEvents(
  url: string,
  key: string,
  customers: number,
  from: number,
  n: number,
): Promise<void> {
  const batch = Array.from({ length: n }, (_, i) => {
    const k = from + i;
    const [type, action] = TYPES[k % TYPES.length]!;
    return {
      type,
      action,
      identifiers: { email: `c${k % customers}@bench.example` },
      data: { product_id: `p${k % 97}`, ts: new Date(Date.now() - (k % 10) * DAY).toISOString() },
    };
  });
  const res = await post(url, '/v3/events', key, batch);
  if (res.status !== 202) throw new Error(`events: ${res.status}`);
}

/** `subset` of the lookups: every bench segment, as the SDKs ask. */
export function subsetOf(segments: number): string {
  return JSON.stringify(Array.from({ length: segments }, (_, s) => `segment_${s}`));
}

/**
 * Lookups from a client thread (lookup.worker.ts); their latencies, sorted, and the seconds they took.
 * `onMeasuring` is called when the thread's warm-up is over and the recorded lookups start (where a
 * caller starts reading CPU time).
 */
export function lookupLoad(
  job: LookupJob,
  onMeasuring: () => void = () => undefined,
): Promise<{ latencies: number[]; seconds: number }> {
  const worker = new Worker(new URL('./lookup.worker.js', import.meta.url), { workerData: job });
  return new Promise((resolve, reject) => {
    worker.on('message', (run: { measuring: true } | { latencies: number[]; seconds: number }) => {
      if ('measuring' in run) return onMeasuring();
      void worker.terminate().then(() => resolve({ ...run, latencies: run.latencies.sort((a, b) => a - b) }));
    });
    worker.once('error', reject);
  });
}
