import { Module, type DynamicModule } from '@nestjs/common';
import { checkWiring, type AppConfig } from '@cdp/config';
import { DriversModule } from '@cdp/drivers';
import { ExportWorkerModule } from '@cdp/exports/worker';
import { HealthModule } from '@cdp/health';
import type { Logger } from '@cdp/logger';
import { ProcessorModule } from '@cdp/processor';
import { RecommendationsWorkerModule } from '@cdp/recommendations';

/**
 * The processor alone: consumes the bus, resolves identities, writes the store. Any number of
 * replicas with a ClickHouse server; exactly one with chDB (it owns the store's directory). Serves
 * `GET /health` on PORT for orchestrators.
 */
@Module({})
export class ProcessorAppModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    checkWiring(config, ['processor'], false);
    return {
      module: ProcessorAppModule,
      imports: [
        DriversModule.forRoot(config, logger, { openStore: true }),
        ProcessorModule,
        HealthModule,
        RecommendationsWorkerModule,
        // chDB has one owner, this process, so exports run here; with a ClickHouse server, apps/exporter.
        ...(config.store === 'chdb' ? [ExportWorkerModule] : []),
      ],
    };
  }
}
