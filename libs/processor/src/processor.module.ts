import { Module } from '@nestjs/common';
import { IngestController } from './ingest.controller.js';
import { IngestPipeline } from './ingest.pipeline.js';
import { IdentityRebuild } from './identity-rebuild.service.js';
import { SubscriptionsStep } from './subscriptions.step.js';

/**
 * The processor role: consumes ingest messages, resolves identities, writes the store. Its ports
 * (bus, identity, profile state, store) come from the drivers module the app composes it with.
 */
@Module({
  controllers: [IngestController],
  providers: [IngestPipeline, IdentityRebuild, SubscriptionsStep],
  exports: [IdentityRebuild],
})
export class ProcessorModule {}
