import { startWithRoleNodeFlags } from '@cdp/runtime/node-flags';

// First, before the app's modules load: it may start this process again with the roles' node flags.
startWithRoleNodeFlags();
const { createApp, runMain } = await import('@cdp/runtime');
const { ProcessorAppModule } = await import('./processor-app.module.js');

/** `apps/processor`: the processor role on its own (scaled-out wiring). */
await runMain('processor', (config, logger) =>
  createApp(ProcessorAppModule.forRoot(config, logger), config, logger, { openapi: false, consume: true }),
);
