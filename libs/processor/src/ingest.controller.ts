import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { Delivery, DeliveryResult } from '@cdp/bus';
import { INGEST_PATTERN } from '@cdp/contracts';
import { IngestPipeline } from './ingest.pipeline.js';
import { processOncePerMessage } from './repeated-messages.js';

/**
 * Receives batches of ingest messages from whichever bus transport the process runs, and returns one
 * result per delivery (BusTransport turns them into acks, retries and dead letters).
 */
@Controller()
export class IngestController {
  constructor(private readonly pipeline: IngestPipeline) {}

  @EventPattern(INGEST_PATTERN)
  handle(@Payload() batch: readonly Delivery[]): Promise<DeliveryResult[]> {
    return processOncePerMessage(batch, (unique) => this.pipeline.process(unique));
  }
}
