import { Module, type DynamicModule } from '@nestjs/common';
import { checkWiring, type AppConfig } from '@cdp/config';
import { DriversModule } from '@cdp/drivers';
import { HealthModule } from '@cdp/health';
import { LoaderModule } from '@cdp/loader';
import type { Logger } from '@cdp/logger';

/**
 * The loader alone: watches the incoming bucket and publishes bulk files' records to the bus, any number
 * of replicas (a file is claimed by compare-and-set in the metadata store). Never opens the store.
 * Serves `GET /health` on PORT.
 */
@Module({})
export class LoaderAppModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    checkWiring(config, ['loader'], false);
    return {
      module: LoaderAppModule,
      imports: [DriversModule.forRoot(config, logger, { openStore: false }), HealthModule, LoaderModule],
    };
  }
}
