import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadConfig, type AppConfig } from '@cdp/config';
import { configureFaults, parseFaults } from '@cdp/faults';
import { createLogger, type Logger } from '@cdp/logger';

/**
 * The body of every app's main: read the configuration once, build the app, listen, and on SIGTERM
 * or SIGINT stop cleanly within ten seconds (what was acknowledged is already durable).
 */
export async function runMain(
  name: string,
  build: (config: AppConfig, logger: Logger) => Promise<NestFastifyApplication>,
): Promise<void> {
  const config = loadConfig();
  // Test hooks: armed only when CDP_TEST_FAULTS names fault points (a malformed rule fails the boot).
  configureFaults(parseFaults(config.testFaults));
  const logger = createLogger(config.logLevel).child({ app: name });
  const app = await build(config, logger);
  await app.listen({ port: config.port, host: config.host });
  logger.info(
    { port: config.port, bus: config.bus, identity: config.identity, store: config.store },
    `${name} listening`,
  );

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
