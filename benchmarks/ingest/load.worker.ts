import { parentPort, workerData } from 'node:worker_threads';
import { eventBatch, rng } from '../lib/generator.js';

/**
 * The clients, on their own thread (and so their own core), outside the platform's processes:
 * `clients` concurrent senders post prepared bodies and report each answer as it arrives.
 *
 * Unpaced (`rate` 0) each client sends its next body as soon as its previous one is answered. Paced, the
 * i-th body is due at start + i × batchSize / rate: a free client waits for the next due body, so the
 * platform sees a steady `rate` events/s as long as `clients` requests in flight are enough to carry it
 * (a client that falls behind sends at once: the run then reports a lower rate than asked).
 */
interface Job {
  baseUrl: string;
  key: string;
  batches: number;
  batchSize: number;
  clients: number;
  seed: number;
  population: number;
  /** Events per second to pace the batches at; 0: as fast as the clients go. */
  rate: number;
}

const job = workerData as Job;
const random = rng(job.seed);
const bodies = Array.from({ length: job.batches }, () =>
  JSON.stringify(eventBatch(random, job.batchSize, job.population)),
);
parentPort!.postMessage({ kind: 'ready' });

const now = () => performance.timeOrigin + performance.now();

parentPort!.once('message', () => {
  void (async () => {
    let next = 0;
    const started = now();
    const interval = job.rate > 0 ? (job.batchSize / job.rate) * 1000 : 0;
    const client = async () => {
      while (next < bodies.length) {
        const i = next++;
        const body = bodies[i]!;
        const wait = started + i * interval - now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const sentAt = now();
        const res = await fetch(`${job.baseUrl}/v3/events`, {
          method: 'POST',
          headers: { 'x-api-key': job.key, 'content-type': 'application/json' },
          body,
        });
        await res.arrayBuffer();
        parentPort!.postMessage({
          kind: 'ack',
          status: res.status,
          id: res.headers.get('z-request-id'),
          sentAt,
          ackAt: now(),
        });
      }
    };
    await Promise.all(Array.from({ length: job.clients }, client));
    parentPort!.postMessage({ kind: 'done' });
  })();
});
