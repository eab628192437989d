import { Controller, Get, Param, Query, Req, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { ConsentState } from '@cdp/consent';
import { ALIAS_PREFIX, NAMED_IDENTIFIERS, SVC_ALL } from '@cdp/domain';
import { Auth } from '@cdp/http-common';
import { ProfileLookup } from '@cdp/http-api/profiles';
import { IdentityIndex } from '@cdp/identity';
import { ListsService, listMemberships } from '@cdp/lists';
import { RecommendationRulesService, Recommender, type RecommendedProduct } from '@cdp/recommendations';
import { SchemaRegistry } from '@cdp/schema';
import { evaluateAudiences, SegmentEventCounts, SegmentsService } from '@cdp/segments';
import { ConsoleSessionGuard, type ConsoleRequest } from './console-session.guard.js';
import type {
  CustomerPageView,
  IdentifierKindsView,
  SegmentStateView,
  TimelinePage,
  Unavailable,
} from './console-views.js';
import { ConsoleStoreReads } from './reads/console-store-reads.js';

/** Events a timeline page shows. */
const TIMELINE_PAGE = 20;
/** Recommendations shown for a customer. */
const RECOMMENDATIONS = 8;

const reason = (err: unknown): Unavailable => ({
  unavailable: err instanceof Error ? err.message : String(err),
});

/**
 * The console's customer page: a customer found by any identifier as `GET /v3/profiles` finds one (its
 * ProfileLookup), then what the API's other reads say of them (identifiers, list memberships by the
 * `GET /v3/lists/subscriptions` rule, recommendations by the recommender) and their history from the
 * store (merges, consent changes, events). The session's account only.
 */
@ApiExcludeController()
@Auth('none')
@UseGuards(ConsoleSessionGuard)
@Controller('console/api/customers')
export class ConsoleCustomersController {
  constructor(
    private readonly lookup: ProfileLookup,
    private readonly identity: IdentityIndex,
    private readonly consent: ConsentState,
    private readonly lists: ListsService,
    private readonly schema: SchemaRegistry,
    private readonly rules: RecommendationRulesService,
    private readonly recommender: Recommender,
    private readonly reads: ConsoleStoreReads,
    private readonly segments: SegmentsService,
    private readonly counts: SegmentEventCounts,
  ) {}

  /** What the search form offers: the identifier kinds of the account (built-in, alias, custom). */
  @Get('identifier-kinds')
  async kinds(@Req() request: ConsoleRequest): Promise<IdentifierKindsView> {
    const schema = await this.schema.read(request.consoleSession!.account.id);
    return { named: [...NAMED_IDENTIFIERS], alias_prefix: ALIAS_PREFIX, custom: [...schema.identifierNames] };
  }

  /** `?email=…`, `?svc_alias_NAME=…`, a custom identifier: the query of `GET /v3/profiles`. */
  @Get()
  async find(
    @Req() request: ConsoleRequest,
    @Query() query: Record<string, unknown>,
  ): Promise<CustomerPageView> {
    const { account } = request.consoleSession!;
    const found = await this.lookup.customer(account.id, query);
    const { customerId, absorbed, profile } = found;
    const everyone = [customerId, ...absorbed];
    const [identifiers, memberships, lists, schema, history, recommendations, segments] = await Promise.all([
      this.identity.identifiersOf(account.id, customerId),
      listMemberships(this.consent, account.id, customerId, absorbed),
      this.lists.all(account.id, account.createdAt),
      this.schema.read(account.id),
      Promise.all([
        this.reads.links(account.id, everyone),
        this.reads.merges(account.id, everyone),
        this.reads.consentHistory(account.id, everyone),
      ]).then(([links, merges, consent]) => ({ links, merges, consent }), reason),
      this.recommendations(account.id, customerId).catch(reason),
      this.segmentStates(account.id, [customerId, ...absorbed], profile.attributes).catch(reason),
    ]);
    const optedIn = profile.attributes.opted_in === true;
    return {
      customer: customerId,
      found_by: found.foundBy,
      redacted: profile.redacted === true,
      attributes: profile.attributes,
      custom_fields: Object.keys(schema.customFields('customers')),
      identifiers,
      merged: absorbed,
      history,
      opted_in: optedIn,
      lists: lists.map((l) => ({
        list_id: l.list_id,
        name: l.name,
        subscribed: l.list_id === SVC_ALL ? optedIn : memberships[l.list_id] === true,
      })),
      recommendations,
      segments,
    };
  }

  /**
   * A customer's events, newest first, a page at a time (`before`: the previous page's `next`). Their
   * own and those of the customers merged into them.
   */
  @Get(':customer/events')
  async events(
    @Req() request: ConsoleRequest,
    @Param('customer') customer: string,
    @Query('before') before?: string,
  ): Promise<TimelinePage> {
    const account = request.consoleSession!.account.id;
    const absorbed = await this.identity.absorbedBy(account, customer);
    return this.reads.timeline(account, [customer, ...absorbed], TIMELINE_PAGE, before);
  }

  /**
   * The segments the customer is in, evaluated as `POST /v3/graphql`'s `audiences` evaluates them: the
   * same SegmentsService definitions, the customer filter on the hot profile, the event counts asked of
   * the store (or its owner) through SegmentEventCounts.
   */
  private async segmentStates(
    account: string,
    ids: string[],
    attributes: Readonly<Record<string, unknown>>,
  ): Promise<SegmentStateView[]> {
    const all = await this.segments.cached(account);
    if (all.length === 0) return [];
    const states = await evaluateAudiences(
      { account, ids, attributes },
      all,
      await this.segments.customerTypes(account),
      this.counts,
      Date.now(),
    );
    return all.map((s) => ({ id: s.id, name: s.name, state: states.get(s.id)! }));
  }

  private async recommendations(account: string, customer: string): Promise<RecommendedProduct[]> {
    return this.recommender.recommend({
      account,
      customer,
      productIds: [],
      limit: RECOMMENDATIONS,
      sort: undefined,
      order: 'desc',
      rules: await this.rules.cached(account),
    });
  }
}
