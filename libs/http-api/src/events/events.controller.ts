import { Controller, Req } from '@nestjs/common';
import { ApiHeader, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';
import { batchOf, eventSchema, type AcceptedBody } from '@cdp/contracts';
import { CurrentPrincipal } from '../auth/principal.js';
import { EventsIngest } from './events.ingest.js';
import { RouteConfig } from '@nestjs/platform-fastify';
import { EventsBodyPipe, type EncodedEventsBatch } from './events-body.pipe.js';
import { BatchBody } from '../ingest/batch-validation.pipe.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';
import { IngestRoute } from '../ingest/ingest-route.decorator.js';

@ApiTags('events')
@ApiHeader({ name: 'x-api-key', description: 'public key (tracker id) or private key', required: true })
@RateLimit('events')
@Controller('v3/events')
export class EventsController {
  constructor(private readonly events: EventsIngest) {}

  // The body's bytes go to the pipe unread: it is parsed off the main thread (EventsBodyPipe).
  @RouteConfig({ rawJsonBody: true })
  @IngestRoute({ body: { schema: batchOf(eventSchema) } })
  async ingest(
    @BatchBody(EventsBodyPipe) batch: EncodedEventsBatch,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    return this.events.acceptEncoded(batch, request.id, principal.account);
  }
}
