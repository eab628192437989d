import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import { ApiHeader, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';
import { batchOf, exactJson, profileSchema, type AcceptedBody } from '@cdp/contracts';
import type { ProfileRecord } from '@cdp/domain';
import { Auth } from '@cdp/http-common';
import { CurrentPrincipal } from '../auth/principal.js';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import { ProfileLookup } from './profile-lookup.service.js';
import { ProfilesBatch } from './profiles.pipe.js';
import { BatchBody, type ValidatedBatch } from '../ingest/batch-validation.pipe.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';
import { IngestRoute } from '../ingest/ingest-route.decorator.js';

@ApiTags('profiles')
@ApiHeader({ name: 'x-api-key', required: true })
@RateLimit('profiles') // reads and writes share one bucket (spec/NOTES.md "Limits")
@Controller('v3/profiles')
export class ProfilesController {
  constructor(
    private readonly publisher: IngestPublisher,
    private readonly lookup: ProfileLookup,
  ) {}

  @IngestRoute({ body: { schema: batchOf(profileSchema) } })
  async upsert(
    @BatchBody(ProfilesBatch) batch: ValidatedBatch<ProfileRecord>,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    return this.publisher.acceptBatch('profiles', batch, { id: request.id, account: principal.account });
  }

  @Get()
  @Auth('private')
  @ApiQuery({ name: 'email', required: false })
  @ApiQuery({ name: 'customer_id', required: false })
  @ApiQuery({ name: 'vuid', required: false })
  @ApiQuery({ name: 'fs_user_id', required: false, description: 'the user id of Optimizely SDKs' })
  @ApiQuery({ name: 'svc_alias_NAME', required: false, description: 'any alias, NAME being the alias name' })
  @ApiResponse({
    status: 200,
    description:
      '{attributes: {...}}; any custom identifier of the account (GET /v3/schema/identifiers) finds the customer too',
  })
  async get(
    @Query() query: Record<string, unknown>,
    @CurrentPrincipal() principal: Principal,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<string> {
    // Custom numbers of 16 to 18 digits are JSON numbers with every digit (exactJson), not doubles.
    const attributes = await this.lookup.find(principal.account, query);
    void reply.type('application/json');
    return exactJson({ attributes });
  }
}
