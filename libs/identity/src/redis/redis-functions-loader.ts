import type { RedisClient } from '@cdp/redis';
import { LIBRARY, LIBRARY_NAME, LIBRARY_VERSION } from './redis-functions.js';

/** Makes sure the server has this version of the identity functions library. */
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
