import { Body, Controller, Get, HttpCode, Param, Post, Put, Query, Req } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { AccountsService, type Principal } from '@cdp/accounts';
import { ApiError } from '@cdp/contracts';
import { ListsService } from '@cdp/lists';
import { Auth } from '@cdp/http-common';
import { CurrentPrincipal } from '../auth/principal.js';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';
import { Idempotent } from '../idempotency/idempotent.decorator.js';
import { subscriptionsSchema } from '../openapi/control-plane.schemas.js';
import { SubscriptionLookup, type SubscriptionStatus } from './subscription-lookup.service.js';
import { parseSubscriptions, type SubscriptionEcho } from './subscriptions.validator.js';

/** Lists and subscriptions (spec "Lists and subscriptions"). */
@ApiTags('lists')
@ApiHeader({ name: 'x-api-key', required: true })
@RateLimit('lists')
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
  @ApiBody({ schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } })
  @ApiResponse({ status: 201, description: '{created: {list_id, name}}; list_id derived from the name' })
  async create(
    @Body() body: { name?: unknown } | undefined,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ created: { list_id: string; name: string } }> {
    const list = await this.lists.create(principal.account, body?.name);
    return { created: { list_id: list.list_id, name: list.name } };
  }

  @Get('subscriptions')
  @Auth('private')
  @ApiQuery({ name: 'email', required: false })
  @ApiQuery({ name: 'customer_id', required: false })
  @ApiQuery({ name: 'include', required: false, description: 'comma-separated list ids to keep' })
  @ApiQuery({ name: 'exclude', required: false, description: 'comma-separated list ids to drop' })
  @ApiResponse({
    status: 200,
    description: '{customer, opted_in, subscriptions: [{name, list_id, subscribed}]}',
  })
  async subscriptions(
    @Query() query: Record<string, unknown>,
    @CurrentPrincipal() principal: Principal,
  ): Promise<SubscriptionStatus> {
    const given = this.lookup.identifiers(query);
    const filter = { include: idSet(query.include, 'include'), exclude: idSet(query.exclude, 'exclude') };
    const lists = await this.lists.all(principal.account, await this.createdAt(principal));
    return this.lookup.status(principal.account, given, lists, filter);
  }

  @Post('subscriptions')
  @HttpCode(200)
  @Idempotent()
  @Auth('public')
  @ApiBody({
    description: '{opted_in, email}, {list_id, email, subscribed}, or an array mixing both (at most 1000)',
    schema: subscriptionsSchema,
  })
  @ApiResponse({ status: 200, description: '{updates: [...]}: each update as applied, once stored durably' })
  @ApiResponse({ status: 404, description: 'list not found' })
  async update(
    @Body() body: unknown,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ updates: SubscriptionEcho[] }> {
    const { records, echo } = parseSubscriptions(body);
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
      key: principal.private ? `private:${principal.keyId ?? 'unknown'}` : 'public',
      records,
    });
    return { updates: echo };
  }

  @Put(':list_id')
  @Auth('private')
  @ApiBody({ schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } })
  @ApiResponse({ status: 200, description: '{updated: {list_id, name}}; the id does not change' })
  async rename(
    @Param('list_id') listId: string,
    @Body() body: { name?: unknown } | undefined,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ updated: { list_id: string; name: string } }> {
    const list = await this.lists.rename(principal.account, listId, body?.name);
    return { updated: { list_id: list.list_id, name: list.name } };
  }

  /** svc_all exists since the account does. */
  private async createdAt(principal: Principal): Promise<string> {
    return (await this.accounts.get(principal.account)).createdAt;
  }
}

function idSet(value: unknown, field: string): Set<string> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string')
    throw ApiError.invalid([{ field, reason: 'must be one comma-separated string of list ids' }]);
  const ids = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return ids.length ? new Set(ids) : undefined;
}
