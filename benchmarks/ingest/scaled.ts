import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { createClient } from 'redis';
import { jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';

/**
 * Removes what a run made on the machine's NATS: its streams (each reserves its max_bytes of
 * JetStream storage, so leftovers soon exhaust it) and its key-value buckets.
 */
export async function removeTopology(natsUrl: string, prefix: string): Promise<void> {
  const nc = await connect({ servers: natsUrl });
  const jsm = await jetstreamManager(nc);
  const ours: string[] = [];
  for await (const s of jsm.streams.list()) {
    const name = s.config.name;
    if (name.startsWith(`${prefix}_`) || name.startsWith(`KV_${prefix.toLowerCase()}_`)) ours.push(name);
  }
  for (const name of ours) await jsm.streams.delete(name);
  await nc.close();
}

/** Removes the run's account from the machine's Redis (a benchmark may scan; the platform never does). */
export async function removeRedisAccount(redisUrl: string, account: string): Promise<void> {
  const redis = createClient({ url: redisUrl });
  await redis.connect();
  for await (const batch of redis.scanIterator({ MATCH: `cdp:{${account}[}#]*`, COUNT: 1000 }))
    if (batch.length) await redis.unlink(batch);
  await redis.quit();
}

/** CPU seconds the Redis server has used so far (INFO cpu: user + sys, all its threads). */
export async function redisCpuSeconds(redisUrl: string): Promise<number> {
  const redis = createClient({ url: redisUrl });
  await redis.connect();
  const info = await redis.info('cpu');
  await redis.quit();
  const of = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)![1]);
  return of('used_cpu_user') + of('used_cpu_sys');
}

/** Messages of the ingest stream not yet acknowledged by a processor (acknowledged = stored). */
export async function ingestBacklog(
  natsUrl: string,
  prefix: string,
): Promise<{ read: () => Promise<{ pending: number; published: number }>; close: () => Promise<void> }> {
  const nc = await connect({ servers: natsUrl });
  const jsm = await jetstreamManager(nc);
  return {
    read: async () => {
      const info = await jsm.streams.info(`${prefix}_INGEST`);
      return { pending: info.state.messages, published: info.state.last_seq };
    },
    close: () => nc.close(),
  };
}

/** Baseline: a JetStream publish (file storage, acknowledged) of the same request bytes, `clients` at a time. */
export async function publishBaseline(natsUrl: string, bodies: string[], clients: number): Promise<number> {
  const nc = await connect({ servers: natsUrl });
  const jsm = await jetstreamManager(nc);
  const name = `BENCH${randomBytes(3).toString('hex').toUpperCase()}`;
  await jsm.streams.add({
    name,
    subjects: [`${name.toLowerCase()}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
  });
  const js = jetstream(nc);
  const data = bodies.map((b) => Buffer.from(b));
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < data.length) {
        const i = next++;
        await js.publish(`${name.toLowerCase()}.events`, data[i], { msgID: `b${i}` });
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await jsm.streams.delete(name);
  await nc.close();
  return seconds;
}
