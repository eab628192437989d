import type { RedisConnection, RedisLibrary } from '@cdp/redis';
import { LIBRARY, LIBRARY_NAME } from './redis-functions.js';

const IDENTITY_LIBRARY: RedisLibrary = { name: LIBRARY_NAME, code: LIBRARY };

/** Makes sure every primary has this version of the identity functions library. */
export function loadFunctions(connection: RedisConnection): Promise<void> {
  return connection.loadLibrary(IDENTITY_LIBRARY);
}

/** Runs an identity function, loading the library again where a node lost it (a restart without persistence). */
export function fcall(
  connection: RedisConnection,
  fn: string,
  keys: string[],
  args: string[],
): Promise<string> {
  return connection.fcall(IDENTITY_LIBRARY, fn, keys, args);
}
