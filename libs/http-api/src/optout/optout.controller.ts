import { Body, Controller, Req, UsePipes } from '@nestjs/common';
import { ApiHeader, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';
import { accepted, type AcceptedBody } from '@cdp/contracts';
import { identityKey, type Identifier } from '@cdp/domain';
import { IdentityIndex, ProfileState } from '@cdp/identity';
import { CurrentPrincipal, sentBy } from '../auth/principal.js';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';
import { IngestRoute } from '../ingest/ingest-route.decorator.js';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { OptOutDto, optOutRequest } from './optout.dto.js';

export interface OptOutAccepted extends AcceptedBody {
  optout: {
    /** The request id (`z-request-id`), under which the audit row is kept. */
    id: string;
    requester: string;
    /** How many customers the identifiers reached. */
    customers: number;
    /** Every identifier added to the opt-out pool. */
    identifiers: Identifier[];
    /** The redaction runs asynchronously, once the request is stored durably. */
    redaction: 'accepted';
  };
}

/**
 * Compliance opt-out (spec "Compliance opt-out"): finds every identifier of the customers the request
 * names (email and vuid through the identity index, phone by exact match on profiles), and publishes
 * one message; the processor redacts and audits. Identifiers that reach nobody join the opt-out pool
 * all the same, so a customer they create later is born redacted.
 */
@ApiTags('compliance')
@ApiHeader({ name: 'x-api-key', required: true })
@RateLimit('compliance')
@UsePipes(EnvelopeValidation)
@Controller('v3/optout')
export class OptOutController {
  constructor(
    private readonly publisher: IngestPublisher,
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
  ) {}

  @IngestRoute({ access: 'private', answer: 'stored durably; customers found, identifiers pooled' })
  @ApiResponse({ status: 400, description: 'requester empty; none of email, phone, vuid supplied' })
  async optout(
    @Body() body: OptOutDto,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<OptOutAccepted> {
    const { requester, identifiers: sent, phone } = optOutRequest(body);
    const account = principal.account;
    const customers = new Set<string>();
    for (const id of sent) {
      const customer = await this.identity.lookup(account, id);
      if (customer) customers.add(customer);
    }
    if (phone !== undefined)
      for (const customer of await this.profiles.customersWithPhone(account, phone)) customers.add(customer);
    const pool = new Map<string, Identifier>(sent.map((id) => [identityKey(id), id]));
    for (const customer of customers)
      for (const id of await this.identity.identifiersOf(account, customer)) pool.set(identityKey(id), id);
    const identifiers = [...pool.values()];
    const record = { requester, sent, customers: [...customers], identifiers };
    await this.publisher.publish({
      id: request.id,
      account,
      kind: 'optout',
      receivedAt: Date.now(),
      key: sentBy(principal),
      records: [phone === undefined ? record : { ...record, phone }],
    });
    return {
      ...accepted(),
      optout: { id: request.id, requester, customers: customers.size, identifiers, redaction: 'accepted' },
    };
  }
}
