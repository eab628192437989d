import { createApp, runMain } from '@cdp/runtime';
import { ProcessorAppModule } from './processor-app.module.js';

/** `apps/processor`: the processor role on its own (scaled-out wiring). */
await runMain('processor', (config, logger) =>
  createApp(ProcessorAppModule.forRoot(config, logger), config, logger, { openapi: false, consume: true }),
);
