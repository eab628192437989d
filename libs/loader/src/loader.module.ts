import { basename, join } from 'node:path';
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
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import { Inspector } from '@cdp/inspector';
import { LOGGER, type Logger } from '@cdp/logger';
import { MetadataStore } from '@cdp/metadata';
import { Metrics } from '@cdp/metrics';
import { SchemaModule, SchemaRegistry } from '@cdp/schema';
import { ActivityLog } from './activity.js';
import { BulkLoader } from './bulk-loader.js';

/** How the activity log names the buckets: their S3 names, or their directories' names. */
export function bucketNames(config: AppConfig): { incoming: string; scratch: string; export: string } {
  if (config.bucketStore === 's3') return config.s3.buckets;
  return {
    incoming: basename(config.buckets.incoming),
    scratch: basename(config.buckets.scratch),
    export: basename(config.buckets.export),
  };
}

/** Runs the loader for the life of the process; it stops before the drivers close, handing its file back. */
@Injectable()
export class LoaderLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly loader: BulkLoader;

  constructor(
    buckets: Buckets,
    bus: EventBus,
    metadata: MetadataStore,
    accounts: AccountsService,
    schema: SchemaRegistry,
    @Inject(APP_CONFIG) config: AppConfig,
    @Inject(LOGGER) logger: Logger,
    metrics: Metrics,
    @Optional() inspector?: Inspector,
  ) {
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
      logger.child({ role: 'loader' }),
      Date.now,
      inspector,
    );
  }

  onApplicationBootstrap(): void {
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
