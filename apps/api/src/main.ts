import { createApp, runMain } from '@cdp/runtime';
import { ApiAppModule } from './api.module.js';

/** `apps/api`: the REST API role on its own (scaled-out wiring). */
await runMain('api', (config, logger) =>
  createApp(ApiAppModule.forRoot(config, logger), config, logger, { openapi: true, consume: false }),
);
