import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { placementRefusal } from '@cdp/bus/nats';
import type { Logger } from '@cdp/logger';

/**
 * The one NATS connection of a process (bus, metadata KV, inspector, recommendation notices all share
 * it). `servers` is the seed list of NATS_URL: the client tries each until one answers, then learns the
 * cluster's other servers from it and moves to them when its server goes.
 */
export function connectNats(servers: string[]): Promise<NatsConnection> {
  return connect({ servers, name: 'cdp', maxReconnectAttempts: -1, reconnectTimeWait: 250 });
}

/**
 * Servers of the cluster the connected server belongs to, itself included (its INFO's `connect_urls`,
 * which every clustered server gossips), 1 when it is not clustered. A cluster configured with
 * `no_advertise` hides them: it counts as 1, and CDP_NATS_REPLICAS must say how many.
 */
export function clusterSize(nc: NatsConnection): number {
  const info = nc.info;
  if (!info?.cluster) return 1;
  return Math.max(1, new Set(info.connect_urls ?? []).size);
}

/** Replicas of every stream and bucket: the setting, else three where the cluster has three servers. */
export function replicasFor(nc: NatsConnection, setting: number | undefined): number {
  return setting ?? Math.min(3, clusterSize(nc));
}

/** A crashed reconciler's lock lapses after this; the others wait for it at most twice as long. */
const LOCK_TTL_MS = 30_000;
const LOCK_KEY = 'replicas';
/** Stream updates wait this long for the meta leader (moving a stream's replicas takes a while). */
const UPDATE_TIMEOUT_MS = 20_000;

/**
 * Brings every stream and KV bucket of this deployment (the prefix's) to `replicas`, one process at a
 * time: each role calls it at boot, the first to take the lock changes what differs, the others find
 * nothing left to change when their turn comes. Two processes updating one stream together is what
 * made one of them fail with a timeout. A crash while holding the lock leaves it to lapse (TTL), and
 * each update is whole, so the next process finishes the work.
 */
export async function reconcileReplicas(
  nc: NatsConnection,
  options: { prefix: string; replicas: number; logger: Logger },
): Promise<void> {
  const { prefix, replicas, logger } = options;
  const lock = await new Kvm(nc).create(`${prefix.toLowerCase()}_topology-lock`, {
    history: 1,
    storage: StorageType.File,
    replicas,
    ttl: LOCK_TTL_MS,
  });
  await takeLock(lock, logger);
  try {
    const jsm = await jetstreamManager(nc, { timeout: UPDATE_TIMEOUT_MS });
    // Polls a moved stream with short requests: one sent while it has no leader gets no answer at all.
    const probe = await jetstreamManager(nc, { timeout: 2000 });
    const lockStream = `KV_${prefix.toLowerCase()}_topology-lock`;
    const ours = (name: string) =>
      name.startsWith(`${prefix.toUpperCase()}_`) || name.startsWith(`KV_${prefix.toLowerCase()}_`);
    const changes = [];
    for await (const info of jsm.streams.list())
      if (ours(info.config.name) && info.config.num_replicas !== replicas) changes.push(info.config);
    // The lock's own bucket last: while its replicas move, neither its holder nor the waiters reach it.
    changes.sort((a, b) => Number(a.name === lockStream) - Number(b.name === lockStream));
    for (const config of changes) {
      logger.info(
        { stream: config.name, from: config.num_replicas, to: replicas },
        'moving a JetStream stream to the configured replicas',
      );
      try {
        await jsm.streams.update(config.name, { ...config, num_replicas: replicas });
      } catch (err) {
        throw placementRefusal(err, config.name, replicas, config.max_bytes);
      }
      await untilLed(probe, config.name);
    }
  } finally {
    await releaseLock(lock);
  }
}

/**
 * Until the moved stream and its consumers have a leader on their new replicas: right after the update
 * they answer nobody for a moment, and a role that opened them then (the processor's consumer) would
 * start on a stream or a consumer that is not there. New replicas catch up in the background.
 */
async function untilLed(jsm: JetStreamManager, stream: string): Promise<void> {
  const deadline = Date.now() + UPDATE_TIMEOUT_MS;
  const until = async (what: string, check: () => Promise<boolean>) => {
    while (!(await check().catch(() => false))) {
      if (Date.now() > deadline) throw new Error(`${what} has no leader 20 s after its replicas moved`);
      await sleep(200);
    }
  };
  await until(`stream ${stream}`, async () => Boolean((await jsm.streams.info(stream)).cluster?.leader));
  // Durable consumers only: ephemeral ones (KV watchers, some of processes gone) stay on one replica.
  const durables: string[] = [];
  await until(`stream ${stream}`, async () => {
    durables.length = 0;
    for await (const c of jsm.consumers.list(stream)) if (c.config.durable_name) durables.push(c.name);
    return true;
  });
  for (const name of durables)
    await until(`consumer ${name} of ${stream}`, async () =>
      Boolean((await jsm.consumers.info(stream, name)).cluster?.leader),
    );
}

/**
 * Waits for the lock, however long another process holds it (at most its TTL, twice over). Failures to
 * reach the bucket are waited out too: its replicas may be moving (the holder's last step). A create
 * whose answer was lost (a timeout on a busy server) may have taken the lock all the same: the holder
 * read back says so, else this process would wait out its own lock's TTL. A wait past a few seconds is
 * logged with the holder, so a boot that seems stuck says what it waits for.
 */
async function takeLock(lock: KV, logger: Logger): Promise<void> {
  const holder = JSON.stringify({ host: hostname(), pid: process.pid, id: randomUUID() });
  const started = Date.now();
  const deadline = started + 2 * LOCK_TTL_MS;
  let logged = started;
  for (;;) {
    let failure: unknown;
    try {
      await lock.create(LOCK_KEY, holder);
      return;
    } catch (err) {
      if (!/wrong last sequence/i.test((err as Error).message)) failure = err;
    }
    const current = await lock.get(LOCK_KEY).catch(() => null);
    const held = current?.operation === 'PUT' ? current.string() : undefined;
    if (held === holder) return;
    if (Date.now() > deadline)
      throw new Error(
        failure
          ? `the JetStream replicas lock could not be taken: ${(failure as Error).message}`
          : 'another process has been reconciling the JetStream replicas for over a minute',
        { cause: failure },
      );
    if (Date.now() - logged > 5000) {
      logged = Date.now();
      logger.warn(
        { holder: held, waitedMs: logged - started, err: failure },
        'waiting for the JetStream replicas lock',
      );
    }
    await sleep(200);
  }
}

/** Released as soon as the bucket answers again; a lock that cannot be released lapses (TTL). */
async function releaseLock(lock: KV): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await lock.delete(LOCK_KEY);
      return;
    } catch {
      if (Date.now() > deadline) return;
      await sleep(200);
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
