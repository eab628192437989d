import { setFlagsFromString } from 'node:v8';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadConfig, type AppConfig } from '@cdp/config';
import { configureFaults, parseFaults } from '@cdp/faults';
import { createLogger, logOutput, type Logger } from '@cdp/logger';
import { startupBanner, startupFacts } from './startup-banner.js';

/**
 * Bounds the garbage the process may carry: the old generation grows at most `heapGrowingPercent` past
 * what the last full collection left live (V8 reads the flag at each collection, so setting it at start
 * is enough). Every main calls it; so do the benchmarks that build an app in their own process.
 */
export function tuneHeap(config: Pick<AppConfig, 'heapGrowingPercent'>): void {
  if (config.heapGrowingPercent > 0)
    setFlagsFromString(`--heap-growing-percent=${config.heapGrowingPercent}`);
}

/**
 * The body of every app's main: read the configuration once, build the app, listen, and on SIGTERM
 * or SIGINT stop cleanly within ten seconds (what was acknowledged is already durable).
 */
export async function runMain(
  name: string,
  build: (config: AppConfig, logger: Logger) => Promise<NestFastifyApplication>,
): Promise<void> {
  const config = loadConfig();
  tuneHeap(config);
  // Test hooks: armed only when CDP_TEST_FAULTS names fault points (a malformed rule fails the boot).
  configureFaults(parseFaults(config.testFaults));
  const output = logOutput(config.logFormat, process.stdout.isTTY === true);
  const logger = createLogger(config.logLevel, output).child({ app: name });
  for (const deprecation of config.deprecations) logger.warn(deprecation);
  const app = await build(config, logger);
  await app.listen({ port: config.port, host: config.host });
  logger.info(
    { port: config.port, bus: config.bus, identity: config.identity, store: config.store },
    `${name} listening`,
  );
  // A person at a terminal gets the essentials in one block; a log collector has them in the records.
  if (output === 'pretty') process.stdout.write(startupBanner(startupFacts(name, app, config)));

  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      if (stopping) return;
      stopping = true;
      setTimeout(() => process.exit(1), 9_500).unref();
      logger.info({ signal }, 'shutting down');
      app.close().then(
        () => {
          logger.info('stopped');
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  }
}
