import { Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { AccountsModule } from '@cdp/accounts';
import { AdminController } from './admin/admin.controller.js';
import { ApiKeyGuard } from './auth/api-key.guard.js';
import { ErrorEnvelopeFilter } from './errors/error-envelope.filter.js';
import { EventsController } from './events/events.controller.js';
import { HealthController } from './health/health.controller.js';
import { IngestPublisher } from './ingest/ingest.publisher.js';
import { ProfileLookup } from './profiles/profile-lookup.service.js';
import { ProfilesController } from './profiles/profiles.controller.js';
import { SchemaModule } from '@cdp/schema';
import { SchemaController } from './schema/schema.controller.js';
import { ObjectsController } from './objects/objects.controller.js';
import { ObjectsIngest } from './objects/objects.ingest.js';

/** The API role: REST endpoints, authentication, validation, publishing to the bus. Stateless. */
@Module({
  imports: [AccountsModule, SchemaModule],
  controllers: [
    EventsController,
    ProfilesController,
    AdminController,
    HealthController,
    SchemaController,
    ObjectsController,
  ],
  providers: [
    IngestPublisher,
    ProfileLookup,
    ObjectsIngest,
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_FILTER, useClass: ErrorEnvelopeFilter },
  ],
  exports: [ObjectsIngest],
})
export class HttpApiModule {}
