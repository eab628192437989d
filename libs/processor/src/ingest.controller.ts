import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { Delivery, Settlement } from '@cdp/bus';
import { INGEST_PATTERN } from '@cdp/contracts';
import { IngestPipeline } from './ingest.pipeline.js';
import { processOncePerMessage } from './repeated-messages.js';

/** Receives batches of ingest messages from whichever bus transport the process runs. */
@Controller()
export class IngestController {
  constructor(private readonly pipeline: IngestPipeline) {}

  @EventPattern(INGEST_PATTERN)
  handle(@Payload() batch: readonly Delivery[]): Promise<Settlement[]> {
    return processOncePerMessage(batch, (unique) => this.pipeline.process(unique));
  }
}
