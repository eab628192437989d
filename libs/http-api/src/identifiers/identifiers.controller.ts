import { Controller, Get, Param, Query, Req, UsePipes } from '@nestjs/common';
import { ApiHeader, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';
import { accepted, batchOf, type AcceptedBody } from '@cdp/contracts';
import type { IdentifierUpdate } from '@cdp/domain';
import { Auth } from '@cdp/http-common';
import { CurrentPrincipal, sentBy } from '../auth/principal.js';
import { IngestRoute } from '../ingest/ingest-route.decorator.js';
import { BatchBody, type ValidatedBatch } from '../ingest/batch-validation.pipe.js';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';
import { IdentifierQueryDto } from './identifier-query.dto.js';
import {
  IdentifierLookup,
  type ConsentStatus,
  type MetadataStatus,
  type ReachabilityStatus,
} from './identifier-lookup.service.js';
import { consentUpdateSchema, metadataUpdateSchema, reachabilityUpdateSchema } from '@cdp/records';
import { ConsentBatch, MetadataBatch, ReachabilityBatch } from './identifier-updates.pipes.js';

const FIELD = { name: 'identifier_field_name', description: 'an identifier field, such as email' };

/**
 * State kept per identifier value (the original API's consent, reachability and identifier metadata;
 * not in the spec, called by its Node SDK). Updates are ingestion: validated whole, published as one
 * bus message, 202 once durable; reads come from the hot state the processor keeps.
 */
@ApiTags('identifiers')
@ApiHeader({ name: 'x-api-key', required: true })
// Consent and reachability are what messaging to lists relies on: the lists family's plan counts them.
@RateLimit('lists')
@UsePipes(EnvelopeValidation)
@Controller('v3')
export class IdentifiersController {
  constructor(
    private readonly publisher: IngestPublisher,
    private readonly lookup: IdentifierLookup,
  ) {}

  @IngestRoute({ path: 'consent', body: { schema: batchOf(consentUpdateSchema) } })
  async updateConsent(
    @BatchBody(ConsentBatch) batch: ValidatedBatch<IdentifierUpdate>,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    return this.publish(batch, request, principal);
  }

  @Get('consent/:identifier_field_name')
  @Auth('private')
  @ApiParam(FIELD)
  @ApiResponse({
    status: 200,
    description:
      '{identifier_field_name, identifier_value, consent, consent_update_reason, consent_update_ts}',
  })
  async consent(
    @Param('identifier_field_name') field: string,
    @Query() query: IdentifierQueryDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<ConsentStatus> {
    const id = await this.lookup.check(principal.account, field, query.id, true);
    return this.lookup.consent(principal.account, id);
  }

  @IngestRoute({ path: 'reachability', body: { schema: batchOf(reachabilityUpdateSchema) } })
  async updateReachability(
    @BatchBody(ReachabilityBatch) batch: ValidatedBatch<IdentifierUpdate>,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    return this.publish(batch, request, principal);
  }

  @Get('reachability/:identifier_field_name')
  @Auth('private')
  @ApiParam(FIELD)
  @ApiResponse({
    status: 200,
    description:
      '{identifier_field_name, identifier_value, reachable, reachable_update_type, reachable_update_reason, reachable_update_ts}',
  })
  async reachability(
    @Param('identifier_field_name') field: string,
    @Query() query: IdentifierQueryDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<ReachabilityStatus> {
    const id = await this.lookup.check(principal.account, field, query.id);
    return this.lookup.reachability(principal.account, id);
  }

  @IngestRoute({ path: 'identifiers', body: { schema: batchOf(metadataUpdateSchema) } })
  async updateMetadata(
    @BatchBody(MetadataBatch) batch: ValidatedBatch<IdentifierUpdate>,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    return this.publish(batch, request, principal);
  }

  @Get('identifiers/:identifier_field_name')
  @Auth('private')
  @ApiParam(FIELD)
  @ApiResponse({
    status: 200,
    description: '{identifier_field_name, identifier_value, metadata, metadata_update_ts}',
  })
  async metadata(
    @Param('identifier_field_name') field: string,
    @Query() query: IdentifierQueryDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<MetadataStatus> {
    const id = await this.lookup.check(principal.account, field, query.id);
    return this.lookup.metadata(principal.account, id);
  }

  private async publish(
    { records, receivedAt }: ValidatedBatch<IdentifierUpdate>,
    request: FastifyRequest,
    principal: Principal,
  ): Promise<AcceptedBody> {
    await this.publisher.publish({
      id: request.id,
      account: principal.account,
      kind: 'identifier-updates',
      receivedAt,
      key: sentBy(principal),
      records,
    });
    return accepted(records.map((r) => ('event' in r ? { dropped: r.event.dropped } : {})));
  }
}
