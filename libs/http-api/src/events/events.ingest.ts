import { Injectable } from '@nestjs/common';
import { accepted, type AcceptedBody } from '@cdp/contracts';
import type { EventRecord } from '@cdp/domain';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import type { ValidatedBatch } from '../ingest/batch-validation.pipe.js';

/**
 * What `POST /v3/events` and `POST /v2/events` share once their shapes are told apart and validated
 * (EventsBatch, V2EventsBatch): publish the request as one bus message, answer 202 (listing dropped
 * fields) once it is durable.
 */
@Injectable()
export class EventsIngest {
  constructor(private readonly publisher: IngestPublisher) {}

  async accept(
    { records, receivedAt }: ValidatedBatch<EventRecord>,
    requestId: string,
    account: string,
  ): Promise<AcceptedBody> {
    await this.publisher.publish({ id: requestId, account, kind: 'events', receivedAt, records });
    return accepted(records);
  }
}
