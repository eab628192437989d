import { join } from 'node:path';
import { Module, type DynamicModule, type Abstract, type Provider } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { Buckets } from '@cdp/buckets';
import { EventBus } from '@cdp/bus';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import type { RedisConnection } from '@cdp/redis';
import { IdentityIndex, ProfileState } from '@cdp/identity';
import { ConsentState, IdentifierState } from '@cdp/consent';
import { LOGGER, type Logger } from '@cdp/logger';
import { IdempotencyStore } from '@cdp/idempotency';
import { Inspector } from '@cdp/inspector';
import { MetadataStore } from '@cdp/metadata';
import { eventsRetentionOf } from '@cdp/accounts';
import { RateLimiter } from '@cdp/rate-limits';
import { OrderState } from '@cdp/orders';
import { Metrics } from '@cdp/metrics';
import { AnalyticStore, ClickHouseStore, MeteredTransport } from '@cdp/store';
import { PurchaseNotices, Recommender, StoreRecommender } from '@cdp/recommendations';
import { RemoteConsoleReads } from '@cdp/console-api/reads';
import { SchemaExportCatalogs } from '@cdp/exports';
import { SchemaModule, SchemaRegistry } from '@cdp/schema';
import {
  DigestedSegmentEventCounts,
  RecentEvents,
  SegmentEventCounts,
  SegmentSizes,
  StoreRecentEvents,
  StoreSegmentEventCounts,
  StoreSegmentSizes,
} from '@cdp/segments';
import { DriversLifecycle, NATS_CONNECTION, REDIS_CLIENT } from './drivers.lifecycle.js';
import { watchNatsConnection } from './nats-connection-state.js';

// Every driver is imported inside its factory, when the configuration picks it: a role loads only the
// drivers it runs (the API with `CDP_STORE=chdb` never maps libchdb, nor DuckDB, into its memory).

/** The NATS subscription answering the API's console store reads (the chDB owner only). */
export const CONSOLE_READS_RESPONDER = Symbol('CONSOLE_READS_RESPONDER');
/** The NATS subscription answering the API's recommendation requests (the chDB owner only). */
export const RECOMMENDATIONS_RESPONDER = Symbol('RECOMMENDATIONS_RESPONDER');
/** The NATS subscription answering the API's segment event counts (the chDB owner only). */
export const SEGMENT_COUNTS_RESPONDER = Symbol('SEGMENT_COUNTS_RESPONDER');
/** The NATS subscription answering the API's segment sizes (the chDB owner only). */
export const SEGMENT_SIZES_RESPONDER = Symbol('SEGMENT_SIZES_RESPONDER');
/** The NATS subscription answering GraphQL's recent events (the chDB owner only). */
export const RECENT_EVENTS_RESPONDER = Symbol('RECENT_EVENTS_RESPONDER');
/** Replicas of this deployment's JetStream streams and KV buckets, settled at boot. */
const NATS_REPLICAS = Symbol('NATS_REPLICAS');

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
 * The provider of a port whose state is kept in Redis when its setting says `redis` (on the one shared
 * connection, REDIS_CLIENT) and by a local driver otherwise; either driver's module is imported only when
 * chosen, so an embedded process never loads a Redis client.
 */
function redisOr<T>(
  port: Abstract<T>,
  setting: string,
  inRedis: (redis: RedisConnection) => Promise<T>,
  local: () => Promise<T>,
): Provider {
  return {
    provide: port,
    inject: [REDIS_CLIENT],
    useFactory: (redis?: RedisConnection): Promise<T> => (setting === 'redis' ? inRedis(redis!) : local()),
  };
}

/**
 * Gives every port the driver the configuration names (parsed and checked at boot: an unknown driver
 * never gets this far). Global: each role module injects the ports it uses.
 */
@Module({})
export class DriversModule {
  static forRoot(config: AppConfig, logger: Logger, options: DriverOptions): DynamicModule {
    const needsNats = config.bus === 'nats' || config.metadata === 'nats';
    // One Redis connection for every port configured to keep its state there (each follows CDP_IDENTITY
    // unless set on its own).
    const needsRedis = [
      config.identity,
      config.rateLimiter,
      config.idempotencyStore,
      config.orderState,
      config.consentState,
    ].includes('redis');
    const providers: Provider[] = [
      { provide: APP_CONFIG, useValue: config },
      { provide: LOGGER, useValue: logger },
      {
        provide: NATS_CONNECTION,
        useFactory: async (): Promise<NatsConnection | undefined> =>
          needsNats ? (await import('./nats-cluster.js')).connectNats(config.natsServers) : undefined,
      },
      {
        // Found once, before the bus or the metadata store opens a stream or a bucket, and every existing
        // stream and bucket brought to it (nats-cluster.ts): what a role creates after has it too.
        provide: NATS_REPLICAS,
        inject: [NATS_CONNECTION],
        useFactory: async (nc?: NatsConnection): Promise<number> => {
          if (!nc) return 1;
          const { reconcileReplicas, replicasFor } = await import('./nats-cluster.js');
          const replicas = replicasFor(nc, config.natsReplicas);
          logger.info(
            {
              replicas,
              setting: config.natsReplicas ?? 'unset (min(3, cluster size))',
              server: nc.info?.server_name,
            },
            'JetStream replicas',
          );
          await reconcileReplicas(nc, { prefix: config.natsPrefix, replicas, logger });
          return replicas;
        },
      },
      {
        provide: REDIS_CLIENT,
        useFactory: async (): Promise<RedisConnection | undefined> => {
          if (!needsRedis) return undefined;
          const { connectRedis } = await import('@cdp/redis');
          const client = await connectRedis(
            config.redisUrl,
            !options.answersClients,
            config.redisSentinelName,
          );
          if (config.identity === 'redis')
            await (await import('@cdp/identity/redis')).loadIdentityFunctions(client);
          return client;
        },
      },
      {
        provide: MetadataStore,
        inject: [NATS_CONNECTION, NATS_REPLICAS],
        useFactory: async (nc: NatsConnection | undefined, replicas: number): Promise<MetadataStore> =>
          config.metadata === 'nats'
            ? new (await import('@cdp/metadata/nats')).NatsKvMetadataStore(nc!, {
                replicas,
                prefix: config.natsPrefix.toLowerCase(),
                connected: watchNatsConnection(nc!),
              })
            : new (await import('@cdp/metadata/file')).FileMetadataStore(join(config.dataDir, 'metadata')),
      },
      {
        provide: Buckets,
        useFactory: async (): Promise<Buckets> =>
          config.bucketStore === 's3'
            ? new (await import('@cdp/buckets/s3')).S3Buckets(config.s3)
            : new (await import('@cdp/buckets/local')).LocalDirBuckets(config.buckets),
      },
      { provide: Metrics, useFactory: () => new Metrics() },
      {
        provide: EventBus,
        inject: [NATS_CONNECTION, NATS_REPLICAS, Metrics],
        useFactory: async (
          nc: NatsConnection | undefined,
          replicas: number,
          metrics: Metrics,
        ): Promise<EventBus> =>
          config.bus === 'nats'
            ? (await import('@cdp/bus/nats')).NatsEventBus.open(nc!, {
                replicas,
                maxBytes: config.natsStreamMaxBytes,
                streamPrefix: config.natsPrefix,
                connected: watchNatsConnection(nc!),
                ackWaitMs: config.natsAckWaitMs,
                onConsumerError: (err) => logger.warn({ err }, 'JetStream fetch failed; retrying'),
                onDeadLetter: metrics.deadLettered,
              })
            : (await import('@cdp/bus/local-log')).LocalLogEventBus.open(join(config.dataDir, 'bus'), {
                maxPendingBytes: config.busMaxPendingBytes,
                onDeadLetter: metrics.deadLettered,
              }),
      },
      redisOr(
        IdentityIndex,
        config.identity,
        async (redis) =>
          // `auto`: an account spreads over a cluster's primaries; on one server the single-tag index
          // costs the platform less CPU (docs/operations.md, "One account on a Redis Cluster").
          config.identitySharding === 'shards' || (config.identitySharding === 'auto' && redis.isCluster)
            ? new (await import('@cdp/identity/redis')).ShardedIdentityIndex(redis)
            : new (await import('@cdp/identity/redis')).RedisIdentityIndex(redis),
        async () => new (await import('@cdp/identity/memory')).MemoryIdentityIndex(),
      ),
      redisOr(
        ProfileState,
        config.identity,
        async (redis) => new (await import('@cdp/identity/redis')).RedisProfileState(redis),
        async () => new (await import('@cdp/identity/memory')).MemoryProfileState(),
      ),
      redisOr(
        ConsentState,
        config.consentState,
        async (redis) => new (await import('@cdp/consent/redis')).RedisConsentState(redis),
        async () => new (await import('@cdp/consent/memory')).MemoryConsentState(),
      ),
      redisOr(
        IdentifierState,
        config.consentState,
        async (redis) => new (await import('@cdp/consent/redis')).RedisIdentifierState(redis),
        async () => new (await import('@cdp/consent/memory')).MemoryIdentifierState(),
      ),
      // Shared by every API replica in Redis (spec/NOTES.md "Limits": per account, not per replica).
      redisOr(
        RateLimiter,
        config.rateLimiter,
        async (redis) => new (await import('@cdp/rate-limits/redis')).RedisRateLimiter(redis),
        async () => new (await import('@cdp/rate-limits/memory')).MemoryRateLimiter(),
      ),
      // Redis when the API runs beside other replicas; a durable file in the data dir otherwise.
      redisOr(
        IdempotencyStore,
        config.idempotencyStore,
        async (redis) => new (await import('@cdp/idempotency/redis')).RedisIdempotencyStore(redis),
        async () =>
          new (await import('@cdp/idempotency/file')).FileIdempotencyStore(
            join(config.dataDir, 'idempotency'),
          ),
      ),
      redisOr(
        OrderState,
        config.orderState,
        async (redis) =>
          new (await import('@cdp/orders/redis')).RedisOrderState(redis, config.orderRetentionMs),
        async () => new (await import('@cdp/orders/memory')).MemoryOrderState(config.orderRetentionMs),
      ),
      {
        // The event inspector's fan-out follows the bus: core NATS subjects scaled out, in-process embedded.
        provide: Inspector,
        inject: [NATS_CONNECTION],
        useFactory: async (nc?: NatsConnection): Promise<Inspector> =>
          config.bus === 'nats'
            ? new (await import('@cdp/inspector/nats')).NatsInspector(nc!, {
                prefix: config.natsPrefix,
                bound: config.console.inspectorBound,
              })
            : new (await import('@cdp/inspector/memory')).MemoryInspector(config.console.inspectorBound),
      },
      DriversLifecycle,
    ];
    if (options.openStore) {
      providers.push({
        provide: AnalyticStore,
        inject: [Metrics, MetadataStore],
        useFactory: async (metrics: Metrics, metadata: MetadataStore): Promise<AnalyticStore> =>
          new ClickHouseStore(
            new MeteredTransport(
              config.store === 'clickhouse'
                ? new (await import('@cdp/store/clickhouse-http')).ClickHouseHttpTransport(config.clickhouse)
                : new (await import('@cdp/store/chdb')).ChdbTransport(join(config.dataDir, 'store', 'chdb')),
              metrics,
            ),
            {
              ...(config.clickhouse.cluster ? { layout: { cluster: config.clickhouse.cluster } } : {}),
              // The operator's events retention (admin API), enforced by the store as a TTL.
              retention: (account) => eventsRetentionOf(metadata, account),
            },
          ),
      });
    }
    // Recommendations are computed where the store is: here when this process opened it, otherwise by
    // the store's owner (the processor with chDB), asked over NATS; that owner answers for every replica.
    providers.push({
      // What the processor stored as bought, told to every process that recommends: in process on the
      // embedded bus, over NATS otherwise (the processors and the recommenders may be other processes).
      provide: PurchaseNotices,
      inject: [NATS_CONNECTION],
      useFactory: async (nc?: NatsConnection): Promise<PurchaseNotices> =>
        config.bus === 'nats'
          ? new (await import('@cdp/recommendations/nats')).NatsPurchaseNotices(
              nc!,
              config.natsPrefix,
              (err) =>
                logger.warn({ err }, 'a purchase notice was lost; the next refresh takes the purchase in'),
            )
          : new (await import('@cdp/recommendations/memory')).MemoryPurchaseNotices(),
    });
    providers.push({
      provide: Recommender,
      inject: [NATS_CONNECTION, PurchaseNotices, { token: AnalyticStore, optional: true }],
      useFactory: async (
        nc: NatsConnection | undefined,
        notices: PurchaseNotices,
        store?: AnalyticStore,
      ): Promise<Recommender> =>
        store
          ? new StoreRecommender(store, notices)
          : new (await import('@cdp/recommendations/nats')).NatsRecommender(nc!, config.natsPrefix),
    });
    // The console's store reads, likewise: here when this process opened the store, else asked of its owner.
    if (!options.openStore && config.bus === 'nats') {
      providers.push({
        provide: RemoteConsoleReads,
        inject: [NATS_CONNECTION],
        useFactory: async (nc: NatsConnection): Promise<RemoteConsoleReads> =>
          new (await import('@cdp/console-api/nats')).NatsConsoleReads(nc, config.natsPrefix),
      });
    }
    // Segment event counts follow the recommendations: where the store is, or asked of its owner.
    providers.push({
      provide: SegmentEventCounts,
      inject: [NATS_CONNECTION, { token: AnalyticStore, optional: true }],
      useFactory: async (
        nc: NatsConnection | undefined,
        store?: AnalyticStore,
      ): Promise<SegmentEventCounts> =>
        !store
          ? new (await import('@cdp/segments/nats')).NatsSegmentEventCounts(nc!, config.natsPrefix)
          : // chDB has one writer, this process: it sees every event stored and keeps the digests
            // lookups count from. Beside a ClickHouse server other processes write too: the query.
            config.store === 'chdb'
            ? new DigestedSegmentEventCounts(store, new StoreSegmentEventCounts(store), (err) =>
                logger.warn({ err }, 'building the segment event digests failed'),
              )
            : new StoreSegmentEventCounts(store),
    });
    // Segment sizes likewise; the store's side compiles the definition against the account's schema,
    // read through the process's one SchemaRegistry (SchemaModule's), not a second cache of its own.
    providers.push({
      provide: SegmentSizes,
      inject: [NATS_CONNECTION, SchemaRegistry, { token: AnalyticStore, optional: true }],
      useFactory: async (
        nc: NatsConnection | undefined,
        schema: SchemaRegistry,
        store?: AnalyticStore,
      ): Promise<SegmentSizes> =>
        store
          ? new StoreSegmentSizes(store, new SchemaExportCatalogs(schema))
          : new (await import('@cdp/segments/nats')).NatsSegmentSizes(nc!, config.natsPrefix),
    });
    // GraphQL's recent events likewise.
    providers.push({
      provide: RecentEvents,
      inject: [NATS_CONNECTION, { token: AnalyticStore, optional: true }],
      useFactory: async (nc: NatsConnection | undefined, store?: AnalyticStore): Promise<RecentEvents> =>
        store
          ? new StoreRecentEvents(store)
          : new (await import('@cdp/segments/nats')).NatsRecentEvents(nc!, config.natsPrefix),
    });
    // This process owns the chDB store and others reach it over NATS: it answers their store reads.
    if (options.openStore && config.store === 'chdb' && config.bus === 'nats') {
      const responder = <T>(
        token: symbol,
        port: Abstract<T> | typeof AnalyticStore,
        failed: string,
        open: (nc: NatsConnection, it: T, onError: (err: unknown) => void) => Promise<unknown>,
      ): Provider => ({
        provide: token,
        inject: [NATS_CONNECTION, port],
        useFactory: (nc: NatsConnection, it: T) => open(nc, it, (err) => logger.warn({ err }, failed)),
      });
      const prefix = config.natsPrefix;
      providers.push(
        responder<Recommender>(
          RECOMMENDATIONS_RESPONDER,
          Recommender,
          'a recommendation request failed',
          async (nc, recommender, onError) =>
            new (await import('@cdp/recommendations/nats')).RecommendationsResponder(
              nc,
              prefix,
              recommender,
              onError,
            ),
        ),
        responder<AnalyticStore>(
          CONSOLE_READS_RESPONDER,
          AnalyticStore,
          'a console read failed',
          async (nc, store, onError) => {
            const { ConsoleReadsResponder } = await import('@cdp/console-api/nats');
            const { ConsoleStoreReads } = await import('@cdp/console-api/reads');
            return new ConsoleReadsResponder(nc, prefix, new ConsoleStoreReads(store), onError);
          },
        ),
        responder<SegmentEventCounts>(
          SEGMENT_COUNTS_RESPONDER,
          SegmentEventCounts,
          'a segment count request failed',
          async (nc, counts, onError) =>
            new (await import('@cdp/segments/nats')).SegmentCountsResponder(nc, prefix, counts, onError),
        ),
        responder<SegmentSizes>(
          SEGMENT_SIZES_RESPONDER,
          SegmentSizes,
          'a segment size request failed',
          async (nc, sizes, onError) =>
            new (await import('@cdp/segments/nats')).SegmentSizesResponder(nc, prefix, sizes, onError),
        ),
        responder<RecentEvents>(
          RECENT_EVENTS_RESPONDER,
          RecentEvents,
          'a recent events request failed',
          async (nc, events, onError) =>
            new (await import('@cdp/segments/nats')).RecentEventsResponder(nc, prefix, events, onError),
        ),
      );
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
      IdentifierState,
      OrderState,
      IdempotencyStore,
      Inspector,
      Metrics,
      Recommender,
      PurchaseNotices,
      ...(!options.openStore && config.bus === 'nats' ? [RemoteConsoleReads] : []),
      SegmentEventCounts,
      SegmentSizes,
      RecentEvents,
    ];
    return {
      module: DriversModule,
      global: true,
      // SegmentSizes reads the schema; SchemaModule's registry takes its MetadataStore from this (global) module.
      imports: [SchemaModule],
      providers,
      exports: options.openStore ? [...exports, AnalyticStore] : exports,
    };
  }
}
