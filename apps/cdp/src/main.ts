import { loadConfig } from '@cdp/config';
import { createLogger } from '@cdp/logger';
import { createCdpApp } from './cdp.app.js';

/** `npm start`: the whole platform in one process on its embedded defaults. */
const config = loadConfig();
const logger = createLogger(config.logLevel);
const app = await createCdpApp(config, logger);
await app.listen({ port: config.port, host: config.host });
logger.info({ port: config.port, dataDir: config.dataDir }, 'cdp listening');

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    if (stopping) return;
    stopping = true;
    // Whatever happens, be gone within ten seconds; what was acknowledged is already on disk.
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
