import { spawn } from 'node:child_process';
import { loadIdentityFunctions } from '@cdp/identity/redis';
import { connectRedis, type RedisConnection } from '@cdp/redis';

/**
 * A private redis-server (no persistence) on `port`, with the identity functions loaded, so that
 * used_memory counts this run alone.
 */
export async function startRedis(
  port: number,
): Promise<{ client: RedisConnection; stop: () => Promise<void> }> {
  const server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  let client: RedisConnection | undefined;
  for (let tries = 0; !client; tries++) {
    try {
      client = await connectRedis(`redis://127.0.0.1:${port}`, false);
    } catch (err) {
      if (tries > 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await loadIdentityFunctions(client);
  return {
    client,
    stop: async () => {
      await client.close();
      server.kill();
    },
  };
}

/** Redis's `used_memory`, bytes. */
export async function usedMemory(client: RedisConnection): Promise<number> {
  const [info] = await client.onEveryPrimary(['INFO', 'memory']);
  return Number(/used_memory:(\d+)/.exec(String(info))![1]);
}
