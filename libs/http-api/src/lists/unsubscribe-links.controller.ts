import { Body, Controller, Get, HttpCode, Inject, Post, Query, Req, Res, UsePipes } from '@nestjs/common';
import { ApiHeader, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import { AccountsService, type Principal } from '@cdp/accounts';
import { ApiError } from '@cdp/contracts';
import { collectIdentifiers, SVC_ALL, type SubscriptionRecord } from '@cdp/domain';
import { ListsService, UnsubscribeLinks, type UnsubscribeClaims } from '@cdp/lists';
import { Auth } from '@cdp/http-common';
import { CurrentPrincipal } from '../auth/principal.js';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { UnsubscribeLinkDto, UnsubscribeTokenQueryDto } from './unsubscribe-links.dto.js';
import { confirmationPage, donePage, UNSUBSCRIBE_PAGE_HEADERS } from './unsubscribe-page.js';

/** The path the links point at; the token travels in the query (a path segment is limited to 100 characters). */
export const UNSUBSCRIBE_PATH = '/v3/lists/unsubscribe';

export interface UnsubscribeLinkAnswer {
  url: string;
  expires_at: string;
  /** The headers of the message that carries the link (RFC 2369, and RFC 8058 one-click). */
  headers: { 'List-Unsubscribe': string; 'List-Unsubscribe-Post': string };
}

/**
 * Email unsubscribe links (spec "Events": a link in a message unsubscribes from the campaign's lists, or
 * globally when it has none). The sender asks for a link with its private key; the link itself needs no
 * key: its token is signed (HMAC) for this purpose, names the account, and expires. A POST to it (the
 * mail client's one-click request, or the confirmation page's form) unsubscribes exactly as
 * `POST /v3/lists/subscriptions` does: a `list`/`subscribe` event and a consent-history row per list.
 */
@ApiTags('lists')
@UsePipes(EnvelopeValidation)
@Controller()
export class UnsubscribeLinksController {
  constructor(
    private readonly links: UnsubscribeLinks,
    private readonly lists: ListsService,
    private readonly accounts: AccountsService,
    private readonly publisher: IngestPublisher,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post('v3/lists/unsubscribe-links')
  @HttpCode(201)
  @Auth('private')
  @ApiHeader({ name: 'x-api-key', description: 'private key', required: true })
  @ApiResponse({
    status: 201,
    description: '{url, expires_at, headers: {List-Unsubscribe, List-Unsubscribe-Post}}',
  })
  @ApiResponse({ status: 404, description: 'list not found' })
  async create(
    @Body() body: UnsubscribeLinkDto,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<UnsubscribeLinkAnswer> {
    const listIds = [...new Set(body.list_ids ?? [])];
    const unknown = await this.lists.unknown(principal.account, listIds);
    if (unknown.length) throw ApiError.notFound(`list not found: ${unknown.join(', ')}`);
    const { token, expiresAt } = await this.links.sign({
      account: principal.account,
      email: body.email.trim(),
      listIds,
    });
    const base = this.config.unsubscribeLinks.baseUrl ?? `${request.protocol}://${request.host}`;
    const url = `${base}${UNSUBSCRIBE_PATH}?token=${token}`;
    return {
      url,
      expires_at: new Date(expiresAt).toISOString(),
      headers: { 'List-Unsubscribe': `<${url}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    };
  }

  @Get(UNSUBSCRIBE_PATH.slice(1))
  @Auth('none')
  @ApiProduces('text/html')
  @ApiResponse({ status: 200, description: 'a confirmation page whose form POSTs to the same link' })
  @ApiResponse({ status: 400, description: 'not a valid link (changed, or made for something else)' })
  @ApiResponse({ status: 410, description: 'the link has expired' })
  async confirm(
    @Query() query: UnsubscribeTokenQueryDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<string> {
    const claims = await this.check(query.token);
    void reply.headers(UNSUBSCRIBE_PAGE_HEADERS);
    return confirmationPage(claims.email, await this.listNames(claims));
  }

  @Post(UNSUBSCRIBE_PATH.slice(1))
  @HttpCode(200)
  @Auth('none')
  @ApiResponse({
    status: 200,
    description: '{unsubscribed: {email, list_ids}} (a page for a browser), once stored durably',
  })
  @ApiResponse({ status: 400, description: 'not a valid link (changed, or made for something else)' })
  @ApiResponse({ status: 410, description: 'the link has expired' })
  async unsubscribe(
    @Query() query: UnsubscribeTokenQueryDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ unsubscribed: { email: string; list_ids: string[] } } | string> {
    const claims = await this.check(query.token);
    const identifiers = collectIdentifiers({ email: claims.email });
    const records: SubscriptionRecord[] = claims.listIds.length
      ? claims.listIds.map((list_id) => ({ identifiers, list_id, subscribed: false, channel_opt_in: false }))
      : [{ identifiers, list_id: SVC_ALL, subscribed: false, channel_opt_in: true }];
    await this.publisher.publish({
      id: request.id,
      account: claims.account,
      kind: 'subscriptions',
      receivedAt: Date.now(),
      key: 'unsubscribe-link',
      records,
    });
    if (/\btext\/html\b/.test(String(request.headers.accept ?? ''))) {
      void reply.headers(UNSUBSCRIBE_PAGE_HEADERS);
      return donePage(claims.email, await this.listNames(claims));
    }
    return { unsubscribed: { email: claims.email, list_ids: claims.listIds } };
  }

  /** The claims of a link that is intact, made for unsubscribing, unexpired, and of an account that exists. */
  private async check(token: string): Promise<UnsubscribeClaims> {
    const checked = await this.links.verify(token);
    if (!checked.ok) {
      if (checked.reason === 'expired')
        throw new ApiError(410, { message: 'this unsubscribe link has expired' });
      throw ApiError.badRequest('this is not a valid unsubscribe link');
    }
    return checked.claims;
  }

  private async listNames(claims: UnsubscribeClaims): Promise<string[]> {
    if (claims.listIds.length === 0) return [];
    const createdAt = (await this.accounts.get(claims.account)).createdAt;
    const byId = new Map((await this.lists.all(claims.account, createdAt)).map((l) => [l.list_id, l.name]));
    return claims.listIds.map((id) => byId.get(id) ?? id);
  }
}
