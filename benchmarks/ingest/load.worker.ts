import { parentPort, workerData } from 'node:worker_threads';
import { eventBatch, rng } from '../lib/generator.js';

/**
 * The clients, on their own thread (and so their own core): `clients` concurrent senders post
 * prepared 1000-event bodies and report each 202 as it arrives.
 */
interface Job {
  baseUrl: string;
  key: string;
  batches: number;
  batchSize: number;
  clients: number;
  seed: number;
  population: number;
}

const job = workerData as Job;
const random = rng(job.seed);
const bodies = Array.from({ length: job.batches }, () =>
  JSON.stringify(eventBatch(random, job.batchSize, job.population)),
);
parentPort!.postMessage({ kind: 'ready' });

parentPort!.once('message', () => {
  void (async () => {
    let next = 0;
    const client = async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const sentAt = performance.timeOrigin + performance.now();
        const res = await fetch(`${job.baseUrl}/v3/events`, {
          method: 'POST',
          headers: { 'x-api-key': job.key, 'content-type': 'application/json' },
          body,
        });
        await res.arrayBuffer();
        const ackAt = performance.timeOrigin + performance.now();
        parentPort!.postMessage({
          kind: 'ack',
          status: res.status,
          id: res.headers.get('z-request-id'),
          sentAt,
          ackAt,
        });
      }
    };
    await Promise.all(Array.from({ length: job.clients }, client));
    parentPort!.postMessage({ kind: 'done' });
  })();
});
