import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';
import { accepted, batchOf, eventSchema, type AcceptedBody } from '@cdp/contracts';
import { SchemaRegistry } from '@cdp/schema';
import { Auth } from '../auth/auth.decorator.js';
import { CurrentPrincipal } from '../auth/principal.js';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import { eventsValidator } from './events.validator.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';

@ApiTags('events')
@ApiHeader({ name: 'x-api-key', description: 'public key (tracker id) or private key', required: true })
@RateLimit('events')
@Controller('v3/events')
export class EventsController {
  constructor(
    private readonly publisher: IngestPublisher,
    private readonly schema: SchemaRegistry,
  ) {}

  @Post()
  @HttpCode(202)
  @Auth('public')
  @ApiBody({ schema: batchOf(eventSchema) })
  @ApiResponse({ status: 202, description: 'stored durably; processed asynchronously' })
  async ingest(
    @Body() body: unknown,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    const receivedAt = Date.now();
    const custom = (await this.schema.read(principal.account)).customFields('events');
    const records = eventsValidator.parse(body, { nowMs: receivedAt, custom });
    await this.publisher.publish({
      id: request.id,
      account: principal.account,
      kind: 'events',
      receivedAt,
      records,
    });
    return accepted(records);
  }
}
