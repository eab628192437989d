import { Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { AccountsModule } from '@cdp/accounts';
import { ListsModule } from '@cdp/lists';
import { RateLimitsModule } from '@cdp/rate-limits';
import { ExportsApiModule } from '@cdp/exports';
import { AdminController } from './admin/admin.controller.js';
import { AdminRateLimitsController } from './admin/admin-rate-limits.controller.js';
import { AdminRetentionController } from './admin/admin-retention.controller.js';
import { AdminDeadLettersController } from './admin/admin-dead-letters.controller.js';
import { CommerceObjectsController } from './commerce/commerce-objects.controller.js';
import { V2Controller } from './commerce/v2.controller.js';
import { ApiKeyGuard } from './auth/api-key.guard.js';
import { ErrorEnvelopeFilter } from '@cdp/http-common';
import { EventsIngest } from './events/events.ingest.js';
import { EventsController } from './events/events.controller.js';
import { ExportsController } from './exports/exports.controller.js';
import { HealthController, MetricsController } from '@cdp/health';
import { ListsController } from './lists/lists.controller.js';
import { UnsubscribeLinksController } from './lists/unsubscribe-links.controller.js';
import { SubscriptionLookup } from './lists/subscription-lookup.service.js';
import { IngestPublisher } from './ingest/ingest.publisher.js';
import { IngestCodec } from './ingest/ingest-codec.js';
import { ProfileLookupModule } from './profiles/profile-lookup.module.js';
import { ProfilesController } from './profiles/profiles.controller.js';
import { SchemaModule } from '@cdp/schema';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import { IdempotencyRecords, IdempotencyStore } from '@cdp/idempotency';
import { IdempotencyInterceptor } from './idempotency/idempotency.interceptor.js';
import { SchemaController } from './schema/schema.controller.js';
import { CustomIdentifiersController } from './schema/custom-identifiers.controller.js';
import { ObjectsController } from './objects/objects.controller.js';

import { OptOutController } from './optout/optout.controller.js';
import { IdentifiersController } from './identifiers/identifiers.controller.js';
import { IdentifierLookup } from './identifiers/identifier-lookup.service.js';
import { SchemaModulesController } from './schema/schema-modules.controller.js';
import { AdminModulesController } from './admin/admin-modules.controller.js';
import { ModuleGate } from './schema/requires-module.js';
import { ActivityModule } from '@cdp/loader';
import { ActivityController } from './activity/activity.controller.js';
import { UploadsController } from './files/uploads.controller.js';
import { UploadRoute } from './files/upload.route.js';
import { UploadSigner } from './files/upload-signer.js';
import { BrowserRequests } from './browser/browser-requests.js';
import { SdkAssets } from './sdk/sdk-assets.js';
import { SdkController } from './sdk/sdk.controller.js';
import { RateLimitInterceptor } from './rate-limits/rate-limit.interceptor.js';
import { RecommendationRulesModule } from '@cdp/recommendations';
import { SegmentsModule } from '@cdp/segments';
import { SegmentsController } from './segments/segments.controller.js';
import { GraphqlController } from './graphql/graphql.controller.js';
import { RecommendationsController } from './recommendations/recommendations.controller.js';
import { AdminRecommendationRulesController } from './admin/admin-recommendation-rules.controller.js';
import { InspectorTap } from './inspector/inspector.tap.js';

/**
 * The API role: REST endpoints, authentication, validation, publishing to the bus. Stateless. The console
 * (libs/console-api) is mounted beside it by the app, not imported here: it builds on this lib's parts.
 */
@Module({
  imports: [
    AccountsModule,
    SchemaModule,
    ProfileLookupModule,
    ExportsApiModule,
    DiscoveryModule,
    ActivityModule,
    ListsModule,
    RateLimitsModule,
    RecommendationRulesModule,
    SegmentsModule,
  ],
  controllers: [
    EventsController,
    ProfilesController,
    AdminController,
    HealthController,
    MetricsController,
    CustomIdentifiersController,
    SchemaController,
    ObjectsController,
    AdminRateLimitsController,
    AdminRetentionController,
    AdminDeadLettersController,
    ListsController,
    UnsubscribeLinksController,
    V2Controller,
    CommerceObjectsController,
    ExportsController,
    OptOutController,
    IdentifiersController,
    SchemaModulesController,
    AdminModulesController,
    RecommendationsController,
    AdminRecommendationRulesController,
    ActivityController,
    UploadsController,
    SdkController,
    SegmentsController,
    GraphqlController,
  ],
  providers: [
    IngestPublisher,
    IngestCodec,
    EventsIngest,
    IdentifierLookup,
    ModuleGate,
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_FILTER, useClass: ErrorEnvelopeFilter },
    SubscriptionLookup,
    { provide: APP_INTERCEPTOR, useClass: RateLimitInterceptor },
    {
      provide: IdempotencyRecords,
      inject: [IdempotencyStore, APP_CONFIG],
      useFactory: (store: IdempotencyStore, config: AppConfig) =>
        new IdempotencyRecords(store, config.idempotency),
    },
    IdempotencyInterceptor,
    {
      provide: UploadSigner,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => new UploadSigner(config.uploads.signingKey),
    },
    UploadRoute,
    InspectorTap,
    SdkAssets,
    BrowserRequests,
  ],
})
export class HttpApiModule {}
