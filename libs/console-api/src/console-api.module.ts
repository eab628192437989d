import { Module } from '@nestjs/common';
import { AccountsModule } from '@cdp/accounts';
import { ExportsApiModule } from '@cdp/exports';
import { ListsModule } from '@cdp/lists';
import { ActivityModule } from '@cdp/loader';
import { RateLimitsModule } from '@cdp/rate-limits';
import { SchemaModule } from '@cdp/schema';
import { SegmentsModule } from '@cdp/segments';
import { RecommendationRulesPipe } from '@cdp/http-api/admin';
import { RecommendationRulesModule } from '@cdp/recommendations';
import { ProfileLookupModule } from '@cdp/http-api/profiles';
import { ConsoleAccountController } from './console-account.controller.js';
import { ConsoleCustomersController } from './console-customers.controller.js';
import { ConsoleExportFileController, ConsoleExportsController } from './console-exports.controller.js';
import { ConsoleOverviewController } from './console-overview.controller.js';
import { ConsoleSegmentsController } from './console-segments.controller.js';
import { ConsoleStoreReads } from './reads/console-store-reads.js';
import { ConsoleRecommendationRulesController } from './console-recommendation-rules.controller.js';
import { ConsoleInspectorController } from './console-inspector.controller.js';
import { ConsolePages } from './console-pages.js';
import { ConsoleSessionController } from './console-session.controller.js';
import { ConsolePageGuard, ConsoleSessionGuard } from './console-session.guard.js';
import { ConsoleSessions } from './console-sessions.service.js';
import { ConsoleStreams } from './console-streams.js';
import { SubscriberCounts } from './subscriber-counts.js';
import { RejectionTap } from './rejection-tap.js';

/** The account console and the event inspector under /console; the apps that serve the API mount it beside HttpApiModule. */
@Module({
  imports: [
    AccountsModule,
    SchemaModule,
    ExportsApiModule,
    ActivityModule,
    ListsModule,
    RateLimitsModule,
    RecommendationRulesModule,
    SegmentsModule,
    ProfileLookupModule,
  ],
  controllers: [
    ConsoleSessionController,
    ConsoleInspectorController,
    ConsoleAccountController,
    ConsoleRecommendationRulesController,
    ConsoleCustomersController,
    ConsoleOverviewController,
    ConsoleSegmentsController,
    ConsoleExportsController,
    ConsoleExportFileController,
  ],
  providers: [
    ConsoleSessions,
    ConsoleSessionGuard,
    ConsolePageGuard,
    ConsoleStreams,
    ConsolePages,
    SubscriberCounts,
    RecommendationRulesPipe,
    ConsoleStoreReads,
    RejectionTap,
  ],
})
export class ConsoleApiModule {}
