import { Injectable, type PipeTransform } from '@nestjs/common';
import { RawJsonBody } from '@cdp/contracts';
import { SchemaRegistry } from '@cdp/schema';
import type { BatchRequest } from '../ingest/batch-validation.pipe.js';
import { IngestCodec } from '../ingest/ingest-codec.js';
import { encodeEventRecords, refusalError, type EventsEncodeContext } from './events-codec.js';

/** A `POST /v3/events` body read and encoded: the records' JSON for the bus, and what the 202 lists. */
export interface EncodedEventsBatch {
  count: number;
  recordsJson: string;
  dropped: { event: number; fields: string[] }[];
  receivedAt: number;
}

/**
 * The pipe of `POST /v3/events`: the account's custom event fields here, then the body's bytes read,
 * validated and encoded by IngestCodec (on a worker thread). Every invalid record is answered at once in
 * the spec's envelope, as BatchValidationPipe does; a request without a JSON body is read here.
 */
@Injectable()
export class EventsBodyPipe implements PipeTransform<BatchRequest, Promise<EncodedEventsBatch>> {
  constructor(
    private readonly schema: SchemaRegistry,
    private readonly codec: IngestCodec,
  ) {}

  async transform(request: BatchRequest): Promise<EncodedEventsBatch> {
    const account = await this.schema.read(request.account);
    const context: EventsEncodeContext = {
      nowMs: request.receivedAt,
      custom: account.customFields('events'),
      customIds: account.identifierNames,
      ...(request.clientIp === undefined ? {} : { clientIp: request.clientIp }),
    };
    const result =
      request.body instanceof RawJsonBody
        ? await this.codec.encodeEvents(request.body.bytes, context)
        : encodeEventRecords(request.body, context);
    if (!result.ok) throw refusalError(result);
    return { ...result, receivedAt: request.receivedAt };
  }
}
