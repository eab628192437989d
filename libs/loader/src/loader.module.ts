import { join } from 'node:path';
import {
  Inject,
  Injectable,
  Module,
  Optional,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { AccountsModule, AccountsService } from '@cdp/accounts';
import { Buckets } from '@cdp/buckets';
import { EventBus } from '@cdp/bus';
import { APP_CONFIG, bucketNames, type AppConfig } from '@cdp/config';
import { Inspector } from '@cdp/inspector';
import { LOGGER, type Logger } from '@cdp/logger';
import { MetadataStore } from '@cdp/metadata';
import { Metrics } from '@cdp/metrics';
import { SchemaModule, SchemaRegistry } from '@cdp/schema';
import { ActivityLog, indexEntriesWithoutSlot } from './activity.js';
import { BulkLoader } from './bulk-loader.js';

/** Runs the loader for the life of the process; it stops before the drivers close, handing its file back. */
@Injectable()
export class LoaderLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly loader: BulkLoader;
  private readonly logger: Logger;

  constructor(
    buckets: Buckets,
    bus: EventBus,
    private readonly metadata: MetadataStore,
    accounts: AccountsService,
    schema: SchemaRegistry,
    @Inject(APP_CONFIG) config: AppConfig,
    @Inject(LOGGER) logger: Logger,
    metrics: Metrics,
    @Optional() inspector?: Inspector,
  ) {
    this.logger = logger.child({ role: 'loader' });
    this.loader = new BulkLoader(
      buckets,
      bus,
      metadata,
      {
        byTrackerId: (trackerId) => accounts.byTrackerId(trackerId),
        customFields: async (account, object) => (await schema.read(account, true)).customFields(object),
        identifiers: async (account) => (await schema.read(account, true)).identifierNames,
      },
      {
        ...config.loader,
        bucketNames: bucketNames(config),
        stagingDir: join(config.dataDir, 'loader-staging'),
        metrics,
      },
      this.logger,
      Date.now,
      inspector,
    );
  }

  async onApplicationBootstrap(): Promise<void> {
    const indexed = await indexEntriesWithoutSlot(this.metadata);
    if (indexed > 0)
      this.logger.info({ entries: indexed }, 'loader: activity entries of before the index indexed');
    this.loader.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.loader.stop();
  }
}

/** The loader role: in `apps/loader` scaled out, and in the all-in-one process. */
@Module({ imports: [AccountsModule, SchemaModule], providers: [LoaderLifecycle] })
export class LoaderModule {}

/** What the API role needs to show the activity log. */
@Module({
  providers: [
    { provide: ActivityLog, inject: [MetadataStore], useFactory: (m: MetadataStore) => new ActivityLog(m) },
  ],
  exports: [ActivityLog],
})
export class ActivityModule {}
