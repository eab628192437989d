import { Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { AccountsModule } from '@cdp/accounts';
import { ExportsApiModule } from '@cdp/exports';
import { AdminController } from './admin/admin.controller.js';
import { ApiKeyGuard } from './auth/api-key.guard.js';
import { ErrorEnvelopeFilter } from './errors/error-envelope.filter.js';
import { EventsController } from './events/events.controller.js';
import { ExportsController } from './exports/exports.controller.js';
import { HealthController } from './health/health.controller.js';
import { IngestPublisher } from './ingest/ingest.publisher.js';
import { ProfileLookup } from './profiles/profile-lookup.service.js';
import { ProfilesController } from './profiles/profiles.controller.js';

/** The API role: REST endpoints, authentication, validation, publishing to the bus. Stateless. */
@Module({
  imports: [AccountsModule, ExportsApiModule],
  controllers: [EventsController, ProfilesController, AdminController, HealthController, ExportsController],
  providers: [
    IngestPublisher,
    ProfileLookup,
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_FILTER, useClass: ErrorEnvelopeFilter },
  ],
})
export class HttpApiModule {}
