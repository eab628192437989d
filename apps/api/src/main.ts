import { startWithRoleNodeFlags } from '@cdp/runtime/node-flags';

// First, before the app's modules load: it may start this process again with the roles' node flags.
startWithRoleNodeFlags();
const { createApp, runMain } = await import('@cdp/runtime');
const { ApiAppModule } = await import('./api.module.js');

/** `apps/api`: the REST API role on its own (scaled-out wiring). */
await runMain('api', (config, logger) =>
  createApp(ApiAppModule.forRoot(config, logger), config, logger, { openapi: true, consume: false }),
);
