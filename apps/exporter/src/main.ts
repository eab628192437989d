import { startWithRoleNodeFlags } from '@cdp/runtime/node-flags';

// First, before the app's modules load: it may start this process again with the roles' node flags.
startWithRoleNodeFlags();
const { createApp, runMain } = await import('@cdp/runtime');
const { ExporterAppModule } = await import('./exporter-app.module.js');

/** `apps/exporter`: export jobs on their own (scaled-out wiring with a ClickHouse server). */
await runMain('exporter', (config, logger) =>
  createApp(ExporterAppModule.forRoot(config, logger), config, logger, { openapi: false, consume: false }),
);
