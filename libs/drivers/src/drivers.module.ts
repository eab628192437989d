import { join } from 'node:path';
import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Buckets, LocalDirBuckets } from '@cdp/buckets';
import { EventBus, LocalLogEventBus, NatsEventBus } from '@cdp/bus';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import {
  connectRedis,
  IdentityIndex,
  MemoryIdentityIndex,
  MemoryProfileState,
  ProfileState,
  RedisIdentityIndex,
  RedisProfileState,
  type RedisClient,
} from '@cdp/identity';
import { ConsentState, MemoryConsentState, RedisConsentState } from '@cdp/consent';
import { LOGGER, type Logger } from '@cdp/logger';
import { FileIdempotencyStore, IdempotencyStore, RedisIdempotencyStore } from '@cdp/idempotency';
import { FileMetadataStore, MetadataStore, NatsKvMetadataStore } from '@cdp/metadata';
import { MemoryRateLimiter, RateLimiter, RedisRateLimiter } from '@cdp/rate-limits';
import { MemoryOrderState, OrderState, RedisOrderState } from '@cdp/orders';
import { Metrics } from '@cdp/metrics';
import {
  AnalyticStore,
  ChdbTransport,
  ClickHouseHttpTransport,
  ClickHouseStore,
  MeteredTransport,
} from '@cdp/store';
import { DriversLifecycle, NATS_CONNECTION, REDIS_CLIENT } from './drivers.lifecycle.js';
import { watchNatsConnection } from './nats-connection-state.js';

export interface DriverOptions {
  /**
   * Whether this process opens the analytic store. chDB lets one process own its data directory, so
   * with `CDP_STORE=chdb` only the process running the processor opens it; a ClickHouse server may be
   * opened by every role.
   */
  openStore: boolean;
  /**
   * Whether this process answers clients (the API): a call to an engine that is away then fails at
   * once (the request is refused with 503) instead of waiting for the engine to come back.
   */
  answersClients?: boolean;
}

/**
 * Gives every port the driver the configuration names (parsed and checked at boot: an unknown driver
 * never gets this far). Global: each role module injects the ports it uses.
 */
@Module({})
export class DriversModule {
  static forRoot(config: AppConfig, logger: Logger, options: DriverOptions): DynamicModule {
    const needsNats = config.bus === 'nats' || config.metadata === 'nats';
    const providers: Provider[] = [
      { provide: APP_CONFIG, useValue: config },
      { provide: LOGGER, useValue: logger },
      {
        provide: NATS_CONNECTION,
        useFactory: (): Promise<NatsConnection> | undefined =>
          needsNats
            ? connect({
                servers: config.natsUrl,
                name: 'cdp',
                maxReconnectAttempts: -1,
                reconnectTimeWait: 250,
              })
            : undefined,
      },
      {
        provide: REDIS_CLIENT,
        useFactory: (): Promise<RedisClient> | undefined =>
          config.identity === 'redis' ? connectRedis(config.redisUrl, !options.answersClients) : undefined,
      },
      {
        provide: MetadataStore,
        inject: [NATS_CONNECTION],
        useFactory: (nc?: NatsConnection) =>
          config.metadata === 'nats'
            ? new NatsKvMetadataStore(nc!, {
                replicas: config.natsReplicas,
                prefix: config.natsPrefix.toLowerCase(),
                connected: watchNatsConnection(nc!),
              })
            : new FileMetadataStore(join(config.dataDir, 'metadata')),
      },
      { provide: Buckets, useFactory: () => new LocalDirBuckets(config.buckets) },
      { provide: Metrics, useFactory: () => new Metrics() },
      {
        provide: EventBus,
        inject: [NATS_CONNECTION, Metrics],
        useFactory: (nc: NatsConnection | undefined, metrics: Metrics) =>
          config.bus === 'nats'
            ? NatsEventBus.open(nc!, {
                replicas: config.natsReplicas,
                maxBytes: config.natsStreamMaxBytes,
                streamPrefix: config.natsPrefix,
                connected: watchNatsConnection(nc!),
                ackWaitMs: config.natsAckWaitMs,
                onConsumerError: (err) => logger.warn({ err }, 'JetStream fetch failed; retrying'),
                onDeadLetter: metrics.deadLettered,
              })
            : LocalLogEventBus.open(join(config.dataDir, 'bus'), {
                maxPendingBytes: config.busMaxPendingBytes,
                onDeadLetter: metrics.deadLettered,
              }),
      },
      {
        provide: IdentityIndex,
        inject: [REDIS_CLIENT],
        useFactory: (redis?: RedisClient) =>
          config.identity === 'redis' ? new RedisIdentityIndex(redis!) : new MemoryIdentityIndex(),
      },
      {
        provide: ProfileState,
        inject: [REDIS_CLIENT],
        useFactory: (redis?: RedisClient) =>
          config.identity === 'redis' ? new RedisProfileState(redis!) : new MemoryProfileState(),
      },
      {
        provide: ConsentState,
        inject: [REDIS_CLIENT],
        useFactory: (redis?: RedisClient) =>
          config.identity === 'redis' ? new RedisConsentState(redis!) : new MemoryConsentState(),
      },
      {
        // Shared by every API replica in Redis (spec/NOTES.md "Limits": per account, not per replica).
        provide: RateLimiter,
        inject: [REDIS_CLIENT],
        useFactory: (redis?: RedisClient) =>
          config.identity === 'redis' ? new RedisRateLimiter(redis!) : new MemoryRateLimiter(),
      },
      {
        // Redis when the API runs beside other replicas; a durable log in the data dir otherwise.
        provide: IdempotencyStore,
        inject: [REDIS_CLIENT],
        useFactory: (redis?: RedisClient) =>
          config.identity === 'redis'
            ? new RedisIdempotencyStore(redis!)
            : new FileIdempotencyStore(join(config.dataDir, 'idempotency')),
      },
      {
        provide: OrderState,
        inject: [REDIS_CLIENT],
        useFactory: (redis?: RedisClient) =>
          config.identity === 'redis' ? new RedisOrderState(redis!) : new MemoryOrderState(),
      },
      DriversLifecycle,
    ];
    if (options.openStore) {
      providers.push({
        provide: AnalyticStore,
        inject: [Metrics],
        useFactory: (metrics: Metrics) =>
          new ClickHouseStore(
            new MeteredTransport(
              config.store === 'clickhouse'
                ? new ClickHouseHttpTransport(config.clickhouse)
                : new ChdbTransport(join(config.dataDir, 'store', 'chdb')),
              metrics,
            ),
          ),
      });
    }
    const exports = [
      APP_CONFIG,
      LOGGER,
      MetadataStore,
      Buckets,
      EventBus,
      IdentityIndex,
      ProfileState,
      RateLimiter,
      ConsentState,
      OrderState,
      IdempotencyStore,
      Metrics,
    ];
    return {
      module: DriversModule,
      global: true,
      providers,
      exports: options.openStore ? [...exports, AnalyticStore] : exports,
    };
  }
}
