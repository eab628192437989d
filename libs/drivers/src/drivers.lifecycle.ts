import { Inject, Injectable, Optional, type OnApplicationShutdown } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { EventBus } from '@cdp/bus';
import { IdentityIndex, ProfileState } from '@cdp/identity';
import { type RedisConnection } from '@cdp/redis';
import { LOGGER, type Logger } from '@cdp/logger';
import { IdempotencyStore } from '@cdp/idempotency';
import { MetadataStore } from '@cdp/metadata';
import { Inspector } from '@cdp/inspector';
import { AnalyticStore } from '@cdp/store';

export const NATS_CONNECTION = Symbol('NATS_CONNECTION');
export const REDIS_CLIENT = Symbol('REDIS_CLIENT');

/**
 * Closes the drivers after the HTTP server and the bus consumer have stopped, so nothing uses a driver
 * while it closes: the bus first (nothing half-written), the store last, the shared connections after
 * the drivers that use them.
 */
@Injectable()
export class DriversLifecycle implements OnApplicationShutdown {
  constructor(
    private readonly bus: EventBus,
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly metadata: MetadataStore,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly idempotency: IdempotencyStore,
    @Optional() private readonly store?: AnalyticStore,
    @Optional() private readonly inspector?: Inspector,
    @Optional() @Inject(NATS_CONNECTION) private readonly nats?: NatsConnection,
    @Optional() @Inject(REDIS_CLIENT) private readonly redis?: RedisConnection,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.inspector?.close();
    this.logger.debug('closing the bus');
    await this.bus.close();
    await Promise.all([
      this.identity.close(),
      this.profiles.close(),
      this.metadata.close(),
      this.idempotency.close(),
    ]);
    this.logger.debug('closing the store');
    await this.store?.close();
    await this.nats?.drain().catch(() => undefined);
    await this.redis?.close();
    this.logger.debug('drivers closed');
  }
}
