import { Injectable } from '@nestjs/common';
import { accepted, type AcceptedBody } from '@cdp/contracts';
import type { EventRecord } from '@cdp/domain';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import type { ValidatedBatch } from '../ingest/batch-validation.pipe.js';
import type { EncodedEventsBatch } from './events-body.pipe.js';

/**
 * What `POST /v3/events` and `POST /v2/events` share once their shapes are told apart and validated
 * (EventsBodyPipe, V2EventsBatch): publish the request as one bus message, answer 202 (listing dropped
 * fields) once it is durable.
 */
@Injectable()
export class EventsIngest {
  constructor(private readonly publisher: IngestPublisher) {}

  async accept(
    batch: ValidatedBatch<EventRecord>,
    requestId: string,
    account: string,
  ): Promise<AcceptedBody> {
    return this.publisher.acceptBatch('events', batch, { id: requestId, account });
  }

  /** The same for records encoded already (EventsBodyPipe): the bus writes their JSON as it is. */
  async acceptEncoded(
    { count, recordsJson, dropped, receivedAt }: EncodedEventsBatch,
    requestId: string,
    account: string,
  ): Promise<AcceptedBody> {
    await this.publisher.publishEncoded({
      head: { id: requestId, account, kind: 'events', receivedAt },
      count,
      recordsJson,
    });
    const body = accepted();
    if (dropped.length) body.dropped = dropped;
    return body;
  }
}
