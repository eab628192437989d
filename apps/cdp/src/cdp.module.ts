import { Module, type DynamicModule } from '@nestjs/common';
import { AccountsBootstrap, AccountsModule, CREATE_FIRST_ACCOUNT } from '@cdp/accounts';
import { checkWiring, type AppConfig } from '@cdp/config';
import { DriversModule } from '@cdp/drivers';
import { ExportWorkerModule } from '@cdp/exports/worker';
import { ConsoleApiModule } from '@cdp/console-api';
import { HttpApiModule } from '@cdp/http-api';
import { LoaderModule } from '@cdp/loader';
import type { Logger } from '@cdp/logger';
import { ProcessorModule } from '@cdp/processor';
import { RecommendationsWorkerModule } from '@cdp/recommendations';

/** The all-in-one process: every role in one process, on the drivers the configuration names. */
@Module({})
export class CdpModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    checkWiring(config, ['api', 'processor'], true);
    return {
      module: CdpModule,
      imports: [
        DriversModule.forRoot(config, logger, { openStore: true }),
        AccountsModule,
        HttpApiModule,
        ConsoleApiModule,
        ProcessorModule,
        ExportWorkerModule,
        RecommendationsWorkerModule,
        LoaderModule,
      ],
      providers: [AccountsBootstrap, { provide: CREATE_FIRST_ACCOUNT, useValue: true }],
    };
  }
}
