import { EmbeddedPlatform } from './embedded.js';
import { ScaledPlatform } from './scaled.js';

/** The wirings a suite runs on: all in one process, and API + processor on NATS and Redis. */
export const WIRINGS = [
  ['embedded', (): Promise<EmbeddedPlatform | ScaledPlatform> => EmbeddedPlatform.start()],
  ['scaled out', (): Promise<EmbeddedPlatform | ScaledPlatform> => ScaledPlatform.start()],
] as const;
