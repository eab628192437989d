import { createApp, runMain } from '@cdp/runtime';
import { ExporterAppModule } from './exporter-app.module.js';

/** `apps/exporter`: export jobs on their own (scaled-out wiring with a ClickHouse server). */
await runMain('exporter', (config, logger) =>
  createApp(ExporterAppModule.forRoot(config, logger), config, logger, { openapi: false, consume: false }),
);
