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
