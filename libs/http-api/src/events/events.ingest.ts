import { Injectable } from '@nestjs/common';
import { accepted, type AcceptedBody, type BatchValidator } from '@cdp/contracts';
import type { EventRecord } from '@cdp/domain';
import { SchemaRegistry } from '@cdp/schema';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import type { EventsContext } from './events.validator.js';

/**
 * What `POST /v3/events` and `POST /v2/events` share once their shapes are told apart: validate with
 * the account's custom event fields, publish the request as one bus message, answer 202 (listing
 * dropped fields) once it is durable.
 */
@Injectable()
export class EventsIngest {
  constructor(
    private readonly publisher: IngestPublisher,
    private readonly schema: SchemaRegistry,
  ) {}

  async accept<In>(
    validator: BatchValidator<In, EventRecord, EventsContext>,
    body: unknown,
    requestId: string,
    account: string,
  ): Promise<AcceptedBody> {
    const receivedAt = Date.now();
    const custom = (await this.schema.read(account)).customFields('events');
    const records = validator.parse(body, { nowMs: receivedAt, custom });
    await this.publisher.publish({ id: requestId, account, kind: 'events', receivedAt, records });
    return accepted(records);
  }
}
