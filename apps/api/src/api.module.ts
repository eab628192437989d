import { Module, type DynamicModule } from '@nestjs/common';
import { AccountsBootstrap, AccountsModule, CREATE_FIRST_ACCOUNT } from '@cdp/accounts';
import { checkWiring, type AppConfig } from '@cdp/config';
import { DriversModule } from '@cdp/drivers';
import { ConsoleApiModule } from '@cdp/console-api';
import { HttpApiModule } from '@cdp/http-api';
import type { Logger } from '@cdp/logger';

/** The API alone: stateless, any number of replicas; publishes to NATS, reads profiles from Redis. */
@Module({})
export class ApiAppModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    checkWiring(config, ['api'], false);
    return {
      module: ApiAppModule,
      imports: [
        DriversModule.forRoot(config, logger, {
          openStore: config.store === 'clickhouse',
          answersClients: true,
        }),
        AccountsModule,
        HttpApiModule,
        ConsoleApiModule,
      ],
      // Replicas share the metadata: the bootstrap account is ensured idempotently; a first account is
      // created only by the one replica told to (two would each create one).
      providers: [AccountsBootstrap, { provide: CREATE_FIRST_ACCOUNT, useValue: config.createFirstAccount }],
    };
  }
}
