import { Module } from '@nestjs/common';
import { IngestController } from './ingest.controller.js';
import { IngestPipeline } from './ingest.pipeline.js';
import { IdentityRebuild } from './identity-rebuild.service.js';
import { SchemaModule } from '@cdp/schema';
import { CustomColumns } from './custom-columns.service.js';
import { ObjectsWriter } from './objects.writer.js';
import { SubscriptionsStep } from './subscriptions.step.js';
import { IdentityStep } from './identity.step.js';
import { OrdersRebuild } from './orders-rebuild.service.js';
import { OrdersStep } from './orders.step.js';
import { ProductsStep } from './products.step.js';
import { OptOutStep } from './optout.step.js';
import { IdentifierUpdatesStep } from './identifier-updates.step.js';
import { StepWriter } from './step-writer.js';
import { CommitLogPruner } from './commit-log-pruner.js';

/**
 * The processor role: consumes ingest messages, resolves identities, writes the store. Its ports
 * (bus, identity, profile state, store) come from the drivers module the app composes it with.
 */
@Module({
  imports: [SchemaModule],
  controllers: [IngestController],
  providers: [
    IngestPipeline,
    IdentityRebuild,
    IdentityStep,
    CustomColumns,
    ObjectsWriter,
    SubscriptionsStep,
    OrdersRebuild,
    OrdersStep,
    ProductsStep,
    OptOutStep,
    StepWriter,
    CommitLogPruner,
    IdentifierUpdatesStep,
  ],
  exports: [IdentityRebuild, CustomColumns, OrdersRebuild],
})
export class ProcessorModule {}
