import { Controller, Req } from '@nestjs/common';
import { ApiHeader, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';
import { accepted, type AcceptedBody } from '@cdp/contracts';
import { CurrentPrincipal } from '../auth/principal.js';
import { IngestRoute } from '../ingest/ingest-route.decorator.js';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import { customRecordsSchema } from '../openapi/control-plane.schemas.js';
import { ObjectBody, ObjectRecordsPipe, type ObjectRecordsBatch } from './object-records.pipe.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';

@ApiTags('objects')
@ApiHeader({ name: 'x-api-key', description: 'public key (tracker id) or private key', required: true })
@RateLimit('objects')
@Controller('v3/objects')
export class ObjectsController {
  constructor(private readonly publisher: IngestPublisher) {}

  /** Validated by ObjectRecordsPipe by the rules of the path's object; resolves once the bus holds it. */
  @IngestRoute({
    path: ':object',
    body: {
      description: 'one record (field name → value) or an array of 1 to 1000; primary key required',
      schema: customRecordsSchema,
    },
  })
  @ApiResponse({ status: 404, description: 'unknown object' })
  async upsert(
    @ObjectBody(ObjectRecordsPipe) batch: ObjectRecordsBatch,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    await this.publisher.publish({ id: request.id, account: principal.account, ...batch });
    return accepted();
  }
}
