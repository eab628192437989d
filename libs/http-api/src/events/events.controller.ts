import { Controller, HttpCode, Post, Req } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';
import { batchOf, eventSchema, type AcceptedBody } from '@cdp/contracts';
import type { EventRecord } from '@cdp/domain';
import { Auth } from '@cdp/http-common';
import { CurrentPrincipal } from '../auth/principal.js';
import { EventsIngest } from './events.ingest.js';
import { inferClientIp } from './client-ip.js';
import { EventsBatch } from './events.validator.js';
import { BatchBody, type ValidatedBatch } from '../ingest/batch-validation.pipe.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';
import { Idempotent } from '../idempotency/idempotent.decorator.js';

@ApiTags('events')
@ApiHeader({ name: 'x-api-key', description: 'public key (tracker id) or private key', required: true })
@RateLimit('events')
@Controller('v3/events')
export class EventsController {
  constructor(private readonly events: EventsIngest) {}

  @Post()
  @HttpCode(202)
  @Idempotent()
  @Auth('public')
  @ApiBody({ schema: batchOf(eventSchema) })
  @ApiResponse({ status: 202, description: 'stored durably; processed asynchronously' })
  async ingest(
    @BatchBody(EventsBatch) batch: ValidatedBatch<EventRecord>,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    inferClientIp(batch.records, principal, request.ip);
    return this.events.accept(batch, request.id, principal.account);
  }
}
