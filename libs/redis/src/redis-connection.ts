import { createClient } from 'redis';

function makeClient(url: string, queueWhileOffline = true) {
  return createClient({
    url,
    socket: { reconnectStrategy: (retries: number) => Math.min(retries * 100, 2000) },
    disableOfflineQueue: !queueWhileOffline,
  });
}

export type RedisClient = ReturnType<typeof makeClient>;

/**
 * Connects to the Redis every Redis driver shares (each loads its own functions library on it). While
 * the connection is down, commands wait for it (up to the client's command timeout) with
 * `queueWhileOffline`, the processor's choice: its work waits in the bus anyway. A process answering
 * clients fails them at once instead, so a request is refused (503) without waiting on a Redis that is away.
 */
export async function connectRedis(url: string, queueWhileOffline = true): Promise<RedisClient> {
  const client = makeClient(url, queueWhileOffline);
  client.on('error', () => undefined); // reconnects on its own; commands fail meanwhile and are retried
  await client.connect();
  return client;
}

/** The health of the shared connection, as every Redis driver reports it. */
export async function redisHealth(
  client: RedisClient,
): Promise<{ driver: string; ready: boolean; detail?: string }> {
  try {
    await client.ping();
    return { driver: 'redis', ready: true };
  } catch (err) {
    return { driver: 'redis', ready: false, detail: String(err) };
  }
}
