import { Body, Controller, Get, HttpCode, Post, Query, Req } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';
import { accepted, batchOf, profileSchema, type AcceptedBody } from '@cdp/contracts';
import type { Attributes } from '@cdp/domain';
import { SchemaRegistry } from '@cdp/schema';
import { Auth } from '@cdp/http-common';
import { CurrentPrincipal } from '../auth/principal.js';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import { ProfileLookup } from './profile-lookup.service.js';
import { profilesValidator } from './profiles.validator.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';
import { Idempotent } from '../idempotency/idempotent.decorator.js';

@ApiTags('profiles')
@ApiHeader({ name: 'x-api-key', required: true })
@RateLimit('profiles') // reads and writes share one bucket (spec/NOTES.md "Limits")
@Controller('v3/profiles')
export class ProfilesController {
  constructor(
    private readonly publisher: IngestPublisher,
    private readonly lookup: ProfileLookup,
    private readonly schema: SchemaRegistry,
  ) {}

  @Post()
  @HttpCode(202)
  @Idempotent()
  @Auth('public')
  @ApiBody({ schema: batchOf(profileSchema) })
  @ApiResponse({ status: 202, description: 'stored durably; processed asynchronously' })
  async upsert(
    @Body() body: unknown,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    const custom = (await this.schema.read(principal.account)).customFields('customers');
    const records = profilesValidator.parse(body, custom);
    await this.publisher.publish({
      id: request.id,
      account: principal.account,
      kind: 'profiles',
      receivedAt: Date.now(),
      records,
    });
    return accepted(records);
  }

  @Get()
  @Auth('private')
  @ApiQuery({ name: 'email', required: false })
  @ApiQuery({ name: 'customer_id', required: false })
  @ApiQuery({ name: 'vuid', required: false })
  @ApiQuery({ name: 'svc_alias_NAME', required: false, description: 'any alias, NAME being the alias name' })
  @ApiResponse({ status: 200, description: '{attributes: {...}}' })
  async get(
    @Query() query: Record<string, unknown>,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ attributes: Attributes }> {
    return { attributes: await this.lookup.find(principal.account, query) };
  }
}
