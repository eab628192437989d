import { createClient } from 'redis';
import { LIBRARY, LIBRARY_NAME, LIBRARY_VERSION } from './redis-functions.js';

function makeClient(url: string, queueWhileOffline = true) {
  return createClient({
    url,
    socket: { reconnectStrategy: (retries: number) => Math.min(retries * 100, 2000) },
    disableOfflineQueue: !queueWhileOffline,
  });
}

export type RedisClient = ReturnType<typeof makeClient>;

/**
 * Connects and makes sure the server has this version of the functions library. While the connection
 * is down, commands wait for it (up to the client's command timeout) with `queueWhileOffline`, the
 * processor's choice: its work waits in the bus anyway. A process answering clients fails them at
 * once instead, so a request is refused (503) without waiting on a Redis that is away.
 */
export async function connectRedis(url: string, queueWhileOffline = true): Promise<RedisClient> {
  const client = makeClient(url, queueWhileOffline);
  client.on('error', () => undefined); // reconnects on its own; commands fail meanwhile and are retried
  await client.connect();
  await loadFunctions(client);
  return client;
}

export async function loadFunctions(client: RedisClient): Promise<void> {
  const listed: unknown = await client.sendCommand([
    'FUNCTION',
    'LIST',
    'LIBRARYNAME',
    LIBRARY_NAME,
    'WITHCODE',
  ]);
  const code = JSON.stringify(listed);
  if (code.includes(`-- version ${LIBRARY_VERSION}`)) return;
  await client.sendCommand(['FUNCTION', 'LOAD', 'REPLACE', LIBRARY]);
}

/** Runs a function, loading the library again if the server lost it (a restart without persistence). */
export async function fcall(
  client: RedisClient,
  fn: string,
  keys: string[],
  args: string[],
): Promise<string> {
  try {
    return (await client.fCall(fn, { keys, arguments: args })) as string;
  } catch (err) {
    if (!/Function not found/i.test(String(err))) throw err;
    await loadFunctions(client);
    return (await client.fCall(fn, { keys, arguments: args })) as string;
  }
}

/** The health of the shared connection, as both Redis drivers report it. */
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
