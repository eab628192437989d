/**
 * Publish rate of one ingest-like stream at R1 and at R3 on the same JetStream cluster: how much the
 * replicas cost the write path (every 202 waits for this acknowledgement).
 *
 *   NATS_URL=nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224 \
 *     node dist/benchmarks/nats-replicas/replicas.bench.js [--seconds 10] [--clients 32]   (after npm run build)
 *
 * Each client publishes one message at a time (as an API request does), a body of 20 events (~4 KB),
 * each with its own message id (deduplication on, as the bus does). Prints JSON at the end.
 */
import { parseArgs } from 'node:util';
import { connect } from '@nats-io/transport-node';
import { DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';

const { values: opt } = parseArgs({
  options: { seconds: { type: 'string', default: '10' }, clients: { type: 'string', default: '32' } },
});
const servers = (process.env.NATS_URL ?? 'nats://127.0.0.1:4222').split(',');
const body = JSON.stringify(
  Array.from({ length: 20 }, (_, i) => ({
    type: 'pageview',
    identifiers: { email: `bench-${i}@example.com` },
    data: { page: `/bench/${i}`, title: 'x'.repeat(120) },
  })),
);

const nc = await connect({ servers });
const jsm = await jetstreamManager(nc);
const js = jetstream(nc);
const results: Record<string, number> = {};
for (const replicas of [1, 3]) {
  const name = `BENCH_R${replicas}`;
  await jsm.streams.delete(name).catch(() => undefined);
  await jsm.streams.add({
    name,
    subjects: [`bench.r${replicas}.>`],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    discard: DiscardPolicy.New,
    max_bytes: 512 * 1024 * 1024,
    duplicate_window: 120e9,
    num_replicas: replicas,
  });
  const deadline = Date.now() + Number(opt.seconds) * 1000;
  let sent = 0;
  await Promise.all(
    Array.from({ length: Number(opt.clients) }, async (_, c) => {
      for (let n = 0; Date.now() < deadline; n++) {
        await js.publish(`bench.r${replicas}.acc.event`, body, { msgID: `${c}-${n}` });
        sent++;
      }
    }),
  );
  results[`R${replicas}`] = Math.round(sent / Number(opt.seconds));
  console.log(
    `R${replicas}: ${results[`R${replicas}`]} messages/s (${results[`R${replicas}`]! * 20} events/s)`,
  );
  await jsm.streams.delete(name);
}
console.log(
  JSON.stringify({ clients: Number(opt.clients), seconds: Number(opt.seconds), messagesPerSecond: results }),
);
await nc.close();
