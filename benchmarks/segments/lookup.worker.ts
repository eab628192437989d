import { parentPort, workerData } from 'node:worker_threads';

/**
 * The SDKs' audience lookups, on a thread of their own (a client is not part of the server's event loop
 * or heap): `POST /v3/graphql` with the public key, the user pasted into the query, `subset` = every
 * segment. Closed loop (`concurrency` clients back to back, for the peak) or open loop (`rate` a second,
 * each sent when due whatever the answers before it, for percentiles). Reports every latency.
 */
export interface LookupJob {
  url: string;
  key: string;
  customers: number;
  subset: string;
  seconds: number;
  /** Closed loop with this many clients… */
  concurrency?: number;
  /** …or open loop at this many lookups a second. */
  rate?: number;
  /**
   * Seconds of the same loop run first and not recorded (default 1): a new thread's first lookups pay for
   * loading fetch, compiling and opening connections, which an SDK that has been running has long paid.
   */
  warmupSeconds?: number;
}

const job = workerData as LookupJob;
let next = 0;

async function lookup(): Promise<number> {
  const id = next++ % job.customers;
  const t = performance.now();
  const res = await fetch(`${job.url}/v3/graphql`, {
    method: 'POST',
    headers: { 'x-api-key': job.key, 'content-type': 'application/json' },
    body: JSON.stringify({
      query: `query {customer(email : "c${id}@bench.example") {audiences(subset: ${job.subset}) {edges {node {name state}}}}}`,
    }),
  });
  const body = (await res.json()) as { data?: { customer: unknown } };
  if (!body.data?.customer) throw new Error(`lookup: ${JSON.stringify(body)}`);
  return performance.now() - t;
}

/** Runs the job's loop for `seconds`; the latencies of the lookups it sent. */
async function run(seconds: number): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  const start = performance.now();
  if (job.rate) {
    const pending: Promise<number>[] = [];
    for (let i = 0; i < job.rate * seconds; i++) {
      const wait = start + (i * 1000) / job.rate - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      pending.push(lookup());
    }
    latencies.push(...(await Promise.all(pending)));
  } else {
    const end = start + seconds * 1000;
    await Promise.all(
      Array.from({ length: job.concurrency ?? 1 }, async () => {
        while (performance.now() < end) latencies.push(await lookup());
      }),
    );
  }
  return { latencies, seconds: (performance.now() - start) / 1000 };
}

await run(job.warmupSeconds ?? 1);
parentPort!.postMessage({ measuring: true });
parentPort!.postMessage(await run(job.seconds));
