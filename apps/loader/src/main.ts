import { createApp, runMain } from '@cdp/runtime';
import { LoaderAppModule } from './loader-app.module.js';

/** `apps/loader`: bulk files from the incoming bucket on their own (scaled-out wiring). */
await runMain('loader', (config, logger) =>
  createApp(LoaderAppModule.forRoot(config, logger), config, logger, { openapi: false, consume: false }),
);
