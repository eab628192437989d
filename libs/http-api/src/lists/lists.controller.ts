import { Body, Controller, Get, HttpCode, Param, Post, Put, Query, Req, UsePipes } from '@nestjs/common';
import { ApiExtraModels, ApiHeader, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { AccountsService, type Principal } from '@cdp/accounts';
import { ApiError, MAX_BATCH } from '@cdp/contracts';
import { ListsService } from '@cdp/lists';
import { Auth } from '@cdp/http-common';
import { CurrentPrincipal, sentBy } from '../auth/principal.js';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';
import { IngestRoute } from '../ingest/ingest-route.decorator.js';
import { SubscriptionLookup, type SubscriptionStatus } from './subscription-lookup.service.js';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { ListNameDto, SubscriptionsQueryDto } from './lists.dto.js';
import { ChannelOptInDto, ListSubscriptionDto } from './subscription-update.dto.js';
import {
  SubscriptionsValidation,
  type ParsedSubscriptions,
  type SubscriptionEcho,
} from './subscriptions.pipe.js';

/** One update of either kind, as the document names them. */
const subscriptionUpdate = {
  oneOf: [{ $ref: getSchemaPath(ListSubscriptionDto) }, { $ref: getSchemaPath(ChannelOptInDto) }],
};

/** Lists and subscriptions (spec "Lists and subscriptions"). */
@ApiTags('lists')
@ApiHeader({ name: 'x-api-key', required: true })
@RateLimit('lists')
@UsePipes(EnvelopeValidation)
@ApiExtraModels(ListSubscriptionDto, ChannelOptInDto)
@Controller('v3/lists')
export class ListsController {
  constructor(
    private readonly lists: ListsService,
    private readonly accounts: AccountsService,
    private readonly publisher: IngestPublisher,
    private readonly lookup: SubscriptionLookup,
  ) {}

  @Get()
  @Auth('public')
  @ApiResponse({ status: 200, description: '{lists: [{name, created_at, list_id}]}, svc_all included' })
  async all(
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ lists: { name: string; created_at: string; list_id: string }[] }> {
    const lists = await this.lists.all(principal.account, await this.createdAt(principal));
    return { lists: lists.map((l) => ({ name: l.name, created_at: l.created_at, list_id: l.list_id })) };
  }

  @Post()
  @HttpCode(201)
  @Auth('private')
  @ApiResponse({ status: 201, description: '{created: {list_id, name}}; list_id derived from the name' })
  async create(
    @Body() body: ListNameDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ created: { list_id: string; name: string } }> {
    const list = await this.lists.create(principal.account, body.name);
    return { created: { list_id: list.list_id, name: list.name } };
  }

  @Get('subscriptions')
  @Auth('private')
  @ApiResponse({
    status: 200,
    description: '{customer, opted_in, subscriptions: [{name, list_id, subscribed}]}',
  })
  async subscriptions(
    @Query() query: SubscriptionsQueryDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<SubscriptionStatus> {
    const given = this.lookup.identifiers(query as Record<string, unknown>);
    const filter = { include: idSet(query.include), exclude: idSet(query.exclude) };
    const lists = await this.lists.all(principal.account, await this.createdAt(principal));
    return this.lookup.status(principal.account, given, lists, filter);
  }

  @IngestRoute({
    path: 'subscriptions',
    status: 200,
    answer: '{updates: [...]}: each update as applied, once stored durably',
    body: {
      description: '{opted_in, email}, {list_id, email, subscribed}, or an array mixing both (at most 1000)',
      schema: {
        oneOf: [
          subscriptionUpdate,
          { type: 'array', items: subscriptionUpdate, minItems: 1, maxItems: MAX_BATCH },
        ],
      },
    },
  })
  @ApiResponse({ status: 404, description: 'list not found' })
  async update(
    @Body(SubscriptionsValidation) { records, echo }: ParsedSubscriptions,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ updates: SubscriptionEcho[] }> {
    const unknown = await this.lists.unknown(
      principal.account,
      records.map((r) => r.list_id),
    );
    if (unknown.length) throw ApiError.notFound(`list not found: ${unknown.join(', ')}`);
    await this.publisher.publish({
      id: request.id,
      account: principal.account,
      kind: 'subscriptions',
      receivedAt: Date.now(),
      key: sentBy(principal),
      records,
    });
    return { updates: echo };
  }

  @Put(':list_id')
  @Auth('private')
  @ApiResponse({ status: 200, description: '{updated: {list_id, name}}; the id does not change' })
  async rename(
    @Param('list_id') listId: string,
    @Body() body: ListNameDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ updated: { list_id: string; name: string } }> {
    const list = await this.lists.rename(principal.account, listId, body.name);
    return { updated: { list_id: list.list_id, name: list.name } };
  }

  /** svc_all exists since the account does. */
  private async createdAt(principal: Principal): Promise<string> {
    return (await this.accounts.get(principal.account)).createdAt;
  }
}

/** The query's comma-separated list ids (a string: SubscriptionsQueryDto checked it). */
function idSet(value: string | undefined): Set<string> | undefined {
  if (value === undefined) return undefined;
  const ids = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return ids.length ? new Set(ids) : undefined;
}
