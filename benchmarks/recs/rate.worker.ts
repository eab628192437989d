import { parentPort, workerData } from 'node:worker_threads';

/**
 * Open-loop load on its own thread: `rate` requests a second for `seconds`, each to the next query of
 * the list, sent on schedule whether or not earlier ones have answered; a latency is counted from the
 * request's scheduled time, so a stalled server is not hidden (no coordinated omission).
 */
interface Job {
  baseUrl: string;
  key: string;
  queries: string[];
  rate: number;
  seconds: number;
}

const job = workerData as Job;
const latencies: number[] = [];
let failures = 0;
const total = job.rate * job.seconds;
const started = performance.now();
const pending: Promise<void>[] = [];
for (let i = 0; i < total; i++) {
  const due = started + (i * 1000) / job.rate;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  pending.push(
    (async () => {
      try {
        const res = await fetch(
          `${job.baseUrl}/v3/recommendations/products?${job.queries[i % job.queries.length]!}`,
          {
            headers: { 'x-api-key': job.key },
          },
        );
        await res.arrayBuffer();
        if (res.status !== 200) failures++;
      } catch {
        failures++;
      }
      latencies.push(performance.now() - due);
    })(),
  );
}
await Promise.all(pending);
parentPort!.postMessage({ latencies, failures, seconds: (performance.now() - started) / 1000 });
