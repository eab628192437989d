import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Buckets } from '@cdp/buckets';
import { EventBus } from '@cdp/bus';
import { IdentityIndex, ProfileState } from '@cdp/identity';
import { LOGGER, type Logger } from '@cdp/logger';
import { MetadataStore } from '@cdp/metadata';
import { AnalyticStore } from '@cdp/store';

/**
 * Start: an identity index that does not keep its content (memory) is rebuilt from the store before
 * anything is processed or read. Stop: runs after the HTTP server and the bus consumer have stopped,
 * so nothing uses a driver while it closes; the bus closes first so nothing is half-written.
 */
@Injectable()
export class DriversLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(
    private readonly bus: EventBus,
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly store: AnalyticStore,
    private readonly metadata: MetadataStore,
    private readonly buckets: Buckets,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onModuleInit(): Promise<void> {
    if (this.identity.persistent) return;
    const started = Date.now();
    let links = 0;
    let profiles = 0;
    for (const { key: account } of await this.metadata.list('accounts')) {
      links += await this.identity.load(account, this.store.identityLinks(account));
      profiles += await this.profiles.load(account, this.store.currentProfiles(account));
    }
    this.logger.info(
      { links, profiles, ms: Date.now() - started },
      'identity index and profiles rebuilt from the store',
    );
  }

  async onApplicationShutdown(): Promise<void> {
    this.logger.debug('closing the bus');
    await this.bus.close();
    this.logger.debug('closing identity, profiles and metadata');
    await Promise.all([this.identity.close(), this.profiles.close(), this.metadata.close()]);
    this.logger.debug('closing the store');
    await this.store.close();
    this.logger.debug('drivers closed');
    void this.buckets;
  }
}
