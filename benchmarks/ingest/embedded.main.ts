import { Metrics } from '@cdp/metrics';
import { runMain } from '@cdp/runtime';
import { createCdpApp } from '../../apps/cdp/src/cdp.app.js';

/**
 * The all-in-one platform for `bench:ingest`: apps/cdp's main (the same app, configuration and shutdown
 * as `npm start`), plus one thing the benchmark needs from inside: the count of event records stored,
 * sent to the parent over IPC when it changes. Reading the process's counter costs microseconds, where
 * a scrape of /metrics every 20 ms would take a large share of the process's CPU (~15 ms each here).
 */
await runMain('cdp', async (config, logger) => {
  const app = await createCdpApp(config, logger);
  const stored = app.get(Metrics).recordsStored;
  let last = -1;
  setInterval(() => {
    void stored.get().then(({ values }) => {
      const events = values.find((v) => v.labels.kind === 'events')?.value ?? 0;
      if (events === last) return;
      last = events;
      process.send?.({ storedEvents: events });
    });
  }, 5).unref();
  return app;
});
