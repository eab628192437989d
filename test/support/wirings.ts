import { dirname, join } from 'node:path';
import { EmbeddedPlatform, type TestAccount } from './embedded.js';
import { ScaledPlatform } from './scaled.js';

/** A running wiring, as a suite sees it: the same calls on both. */
export type Platform = EmbeddedPlatform | ScaledPlatform;
/** Starts a wiring; `env` adds settings to every process of it. */
export type StartWiring = (env?: Record<string, string>) => Promise<Platform>;

/** The wirings a suite runs on: all in one process, and API + processor on NATS and Redis. */
export const WIRINGS = [
  ['embedded', (env?: Record<string, string>): Promise<Platform> => EmbeddedPlatform.start(env)],
  ['scaled out', (env?: Record<string, string>): Promise<Platform> => ScaledPlatform.start(env)],
] as const;

/**
 * A wiring started with one account (rates TEST_ACCOUNT_RATES): what a suite's `beforeAll` does first.
 * `({ p, acc } = await startWithAccount(start))` keeps the suite's own `p` and `acc`.
 */
export async function startWithAccount(
  start: StartWiring,
  name?: string,
  env?: Record<string, string>,
): Promise<{ p: Platform; acc: TestAccount }> {
  const p = await start(env);
  return { p, acc: await p.createAccount(name) };
}

/**
 * Where an export record's `path` (`<bucket>/<tracker_id>/data-exports/<export_id>`, the bucket named by
 * its directory) is on this machine: under the directory that holds the export bucket.
 */
export function exportDirOnDisk(p: Platform, path: string): string {
  return join(
    p instanceof EmbeddedPlatform ? dirname(p.config.buckets.export) : join(p.dataDir, 'buckets'),
    path,
  );
}

/**
 * Loses the state the platform keeps beside its store (identity index, list and order state), so that
 * it must be rebuilt from the store. Embedded it lives in memory: the platform is restarted on its data
 * directory, which rebuilds it, and the new platform is returned. Scaled out it lives in Redis: Redis
 * is flushed, and the next batch of an account makes the processor rebuild that account's state.
 */
export async function loseDerivedState(p: Platform): Promise<Platform> {
  if (p instanceof ScaledPlatform) {
    await p.redis.flush();
    return p;
  }
  const dataDir = p.config.dataDir;
  await p.close();
  return EmbeddedPlatform.start({}, dataDir);
}
