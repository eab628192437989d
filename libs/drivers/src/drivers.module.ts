import { join } from 'node:path';
import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { Buckets, LocalDirBuckets } from '@cdp/buckets';
import { EventBus, LocalLogEventBus } from '@cdp/bus';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import { IdentityIndex, MemoryIdentityIndex, MemoryProfileState, ProfileState } from '@cdp/identity';
import { LOGGER, type Logger } from '@cdp/logger';
import { FileMetadataStore, MetadataStore } from '@cdp/metadata';
import { AnalyticStore, ChdbTransport, ClickHouseStore } from '@cdp/store';
import { DriversLifecycle } from './drivers.lifecycle.js';

/**
 * Gives every port the driver the configuration names (config is parsed and checked at boot, so an
 * unknown driver never gets this far). Global: each role module injects the ports it uses.
 */
@Module({})
export class DriversModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    const providers: Provider[] = [
      { provide: APP_CONFIG, useValue: config },
      { provide: LOGGER, useValue: logger },
      { provide: MetadataStore, useFactory: () => new FileMetadataStore(join(config.dataDir, 'metadata')) },
      { provide: Buckets, useFactory: () => new LocalDirBuckets(config.buckets) },
      {
        provide: AnalyticStore,
        useFactory: () => new ClickHouseStore(new ChdbTransport(join(config.dataDir, 'store', 'chdb'))),
      },
      {
        provide: EventBus,
        useFactory: () =>
          LocalLogEventBus.open(join(config.dataDir, 'bus'), { maxPendingBytes: config.busMaxPendingBytes }),
      },
      { provide: IdentityIndex, useFactory: () => new MemoryIdentityIndex() },
      { provide: ProfileState, useFactory: () => new MemoryProfileState() },
      DriversLifecycle,
    ];
    return {
      module: DriversModule,
      global: true,
      providers,
      exports: [
        APP_CONFIG,
        LOGGER,
        MetadataStore,
        Buckets,
        AnalyticStore,
        EventBus,
        IdentityIndex,
        ProfileState,
      ],
    };
  }
}
