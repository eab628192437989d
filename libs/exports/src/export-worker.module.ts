import { join } from 'node:path';
import {
  Inject,
  Injectable,
  Module,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { Buckets } from '@cdp/buckets';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import { LOGGER, type Logger } from '@cdp/logger';
import { MetadataStore } from '@cdp/metadata';
import { Metrics } from '@cdp/metrics';
import { AnalyticStore } from '@cdp/store';
import { ExportCatalogs } from './export-objects.js';
import { ExportCatalogsModule } from './export-catalogs.module.js';
import { ExportRunner } from './export.runner.js';
import { ExportWorker } from './export.worker.js';

/**
 * Runs the export worker for the life of the process. It stops before the drivers close (the store
 * last of all), handing an unfinished job back so a restarted worker resumes it.
 */
@Injectable()
export class ExportWorkerLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly worker: ExportWorker;

  constructor(
    metadata: MetadataStore,
    store: AnalyticStore,
    buckets: Buckets,
    catalogs: ExportCatalogs,
    @Inject(APP_CONFIG) config: AppConfig,
    @Inject(LOGGER) logger: Logger,
    metrics: Metrics,
  ) {
    const { rowsPerFile, memoryLimitMb, threads, leaseMs, pollMs } = config.exports;
    const exporterLogger = logger.child({ role: 'exporter' });
    const runner = new ExportRunner(
      store,
      buckets,
      catalogs,
      { tmpDir: join(config.dataDir, 'tmp', 'exports'), rowsPerFile, memoryLimitMb, threads },
      exporterLogger,
    );
    this.worker = new ExportWorker(metadata, runner, { leaseMs, pollMs, metrics }, exporterLogger);
  }

  onApplicationBootstrap(): void {
    this.worker.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.worker.stop();
  }
}

/**
 * The exporter role: in the processor's process when the store is chDB (one process owns it), in
 * `apps/exporter` with a ClickHouse server, and in the all-in-one process.
 */
@Module({
  imports: [ExportCatalogsModule],
  providers: [ExportWorkerLifecycle],
})
export class ExportWorkerModule {}
