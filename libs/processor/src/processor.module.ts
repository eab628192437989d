import { Module } from '@nestjs/common';
import { IngestController } from './ingest.controller.js';
import { IngestPipeline } from './ingest.pipeline.js';
import { IdentityRebuild } from './identity-rebuild.service.js';
import { OrdersRebuild } from './orders-rebuild.service.js';
import { OrdersStep } from './orders.step.js';
import { ProductsStep } from './products.step.js';

/**
 * The processor role: consumes ingest messages, resolves identities, writes the store. Its ports
 * (bus, identity, profile state, store) come from the drivers module the app composes it with.
 */
@Module({
  controllers: [IngestController],
  providers: [IngestPipeline, IdentityRebuild, OrdersRebuild, OrdersStep, ProductsStep],
  exports: [IdentityRebuild, OrdersRebuild],
})
export class ProcessorModule {}
