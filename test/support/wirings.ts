import { dirname, join } from 'node:path';
import { EmbeddedPlatform } from './embedded.js';
import { ScaledPlatform } from './scaled.js';

/**
 * The wirings a suite runs on: all in one process, and API + processor on NATS and Redis. `env` adds
 * settings to every process of the wiring.
 */
export const WIRINGS = [
  [
    'embedded',
    (env?: Record<string, string>): Promise<EmbeddedPlatform | ScaledPlatform> => EmbeddedPlatform.start(env),
  ],
  [
    'scaled out',
    (env?: Record<string, string>): Promise<EmbeddedPlatform | ScaledPlatform> => ScaledPlatform.start(env),
  ],
] as const;

/**
 * Where an export record's `path` (`<bucket>/<tracker_id>/data-exports/<export_id>`, the bucket named by
 * its directory) is on this machine: under the directory that holds the export bucket.
 */
export function exportDirOnDisk(p: EmbeddedPlatform | ScaledPlatform, path: string): string {
  return join(
    p instanceof EmbeddedPlatform ? dirname(p.config.buckets.export) : join(p.dataDir, 'buckets'),
    path,
  );
}
