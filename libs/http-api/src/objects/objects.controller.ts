import { Body, Controller, HttpCode, Param, Post, Req } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';
import { accepted, type AcceptedBody } from '@cdp/contracts';
import { Auth } from '@cdp/http-common';
import { CurrentPrincipal } from '../auth/principal.js';
import { Idempotent } from '../idempotency/idempotent.decorator.js';
import { customRecordsSchema } from '../openapi/control-plane.schemas.js';
import { ObjectsIngest } from './objects.ingest.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';

@ApiTags('objects')
@ApiHeader({ name: 'x-api-key', description: 'public key (tracker id) or private key', required: true })
@RateLimit('objects')
@Controller('v3/objects')
export class ObjectsController {
  constructor(private readonly ingest: ObjectsIngest) {}

  @Post(':object')
  @HttpCode(202)
  @Idempotent()
  @Auth('public')
  @ApiBody({
    description: 'one record (field name → value) or an array of 1 to 1000; primary key required',
    schema: customRecordsSchema,
  })
  @ApiResponse({ status: 202, description: 'stored durably; processed asynchronously' })
  @ApiResponse({ status: 404, description: 'unknown object' })
  async upsert(
    @Param('object') object: string,
    @Body() body: unknown,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    await this.ingest.upsert(principal.account, request.id, object, body);
    return accepted();
  }
}
