import { Module, type DynamicModule } from '@nestjs/common';
import { checkWiring, ConfigError, type AppConfig } from '@cdp/config';
import { DriversModule } from '@cdp/drivers';
import { ExportWorkerModule } from '@cdp/exports/worker';
import { HealthModule } from '@cdp/health';
import type { Logger } from '@cdp/logger';

/**
 * The exporter alone: runs export jobs against a ClickHouse server, any number of replicas (a job is
 * claimed by compare-and-set). With chDB the processor owns the store and runs exports itself.
 * Serves `GET /health` on PORT.
 */
@Module({})
export class ExporterAppModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    checkWiring(config, ['exporter'], false);
    if (config.store !== 'clickhouse') {
      throw new ConfigError(
        'apps/exporter needs CDP_STORE=clickhouse: with chDB the processor owns the store and runs exports',
      );
    }
    return {
      module: ExporterAppModule,
      imports: [DriversModule.forRoot(config, logger, { openStore: true }), HealthModule, ExportWorkerModule],
    };
  }
}
