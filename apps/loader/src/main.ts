import { startWithRoleNodeFlags } from '@cdp/runtime/node-flags';

// First, before the app's modules load: it may start this process again with the roles' node flags.
startWithRoleNodeFlags();
const { createApp, runMain } = await import('@cdp/runtime');
const { LoaderAppModule } = await import('./loader-app.module.js');

/** `apps/loader`: bulk files from the incoming bucket on their own (scaled-out wiring). */
await runMain('loader', (config, logger) =>
  createApp(LoaderAppModule.forRoot(config, logger), config, logger, { openapi: false, consume: false }),
);
