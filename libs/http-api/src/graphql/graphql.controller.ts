import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiHeader, ApiResponse, ApiTags } from '@nestjs/swagger';
import {
  execute,
  GraphQLError,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLFormattedError,
  type GraphQLSchema,
} from 'graphql';
import { AccountsService, type Principal } from '@cdp/accounts';
import { ApiError } from '@cdp/contracts';
import { extractIdentifiers } from '@cdp/domain';
import { Auth } from '@cdp/http-common';
import { IdentityIndex, ProfileState } from '@cdp/identity';
import { ListsService } from '@cdp/lists';
import { SchemaRegistry } from '@cdp/schema';
import { evaluateAudiences, RecentEvents, SegmentEventCounts, SegmentsService } from '@cdp/segments';
import { CurrentPrincipal } from '../auth/principal.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';
import { boundedQuery } from './graphql-limits.js';
import { buildSchema, type GraphqlContext, type ResolvedCustomer } from './graphql-schema.js';
import { ValidatedQueries } from './validated-queries.js';

/** A query longer than this is refused before parsing. */
const MAX_QUERY_LENGTH = 20_000;
const RULES = [...specifiedRules, boundedQuery];

interface GraphqlAnswer {
  data?: Record<string, unknown> | null;
  errors?: GraphQLFormattedError[];
}

/** Every error carries `extensions` (Optimizely's SDKs read `errors[0].extensions` unguarded). */
function formatted(err: GraphQLError, classification: string): GraphQLFormattedError {
  const f = err.toJSON();
  return { ...f, extensions: { classification, ...f.extensions } };
}

/**
 * `POST /v3/graphql` (docs/api-notes.md "GraphQL"): the audiences of a customer as Optimizely's SDKs ask
 * for them (public key), and the customer's attributes, segments and lists for a private key. A query
 * that does not parse or validate answers 200 with `errors` and no `data`, as GraphQL over HTTP does.
 */
@ApiTags('graphql')
@ApiHeader({ name: 'x-api-key', required: true })
@RateLimit('recommendations')
@Controller('v3/graphql')
export class GraphqlController {
  private readonly schemas = new Map<string, GraphQLSchema>();
  private readonly validated = new ValidatedQueries();

  constructor(
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly schema: SchemaRegistry,
    private readonly segments: SegmentsService,
    private readonly counts: SegmentEventCounts,
    private readonly recentEvents: RecentEvents,
    private readonly lists: ListsService,
    private readonly accounts: AccountsService,
  ) {}

  @Post()
  @HttpCode(200)
  @Auth('public')
  @ApiResponse({ status: 200, description: '{data, errors?}' })
  async query(@Body() body: unknown, @CurrentPrincipal() principal: Principal): Promise<GraphqlAnswer> {
    const { query, variables, operationName } = requestOf(body);
    const custom = [...(await this.schema.read(principal.account)).identifierNames].sort();
    const schemaKey = custom.join(',');
    const schema = this.schemaFor(schemaKey, custom);
    let document: DocumentNode;
    try {
      document = parse(query, { maxTokens: 5_000 });
    } catch (err) {
      return { errors: [formatted(err as GraphQLError, 'InvalidSyntax')] };
    }
    if (!this.validated.has(schemaKey, query)) {
      const invalid = validate(schema, document, RULES, { maxErrors: 10 });
      if (invalid.length) return { errors: invalid.map((e) => formatted(e, 'ValidationError')) };
      this.validated.remember(schemaKey, query);
    }
    const result = await execute({
      schema,
      document,
      contextValue: this.context(principal, custom),
      variableValues: variables,
      operationName,
    });
    return {
      data: result.data ?? null,
      ...(result.errors?.length
        ? { errors: result.errors.map((e) => formatted(e, 'DataFetchingException')) }
        : {}),
    };
  }

  private schemaFor(key: string, custom: string[]): GraphQLSchema {
    let schema = this.schemas.get(key);
    if (!schema) {
      schema = buildSchema(custom);
      if (this.schemas.size > 1_000) this.schemas.clear();
      this.schemas.set(key, schema);
    }
    return schema;
  }

  private context(principal: Principal, custom: string[]): GraphqlContext {
    const account = principal.account;
    return {
      account,
      private: principal.private,
      customer: (args) => this.customer(account, args, new Set(custom)),
      segments: () => this.segments.all(account),
      lists: async () => this.lists.all(account, (await this.accounts.get(account)).createdAt),
    };
  }

  private async customer(
    account: string,
    args: Record<string, unknown>,
    custom: ReadonlySet<string>,
  ): Promise<ResolvedCustomer> {
    const ids = extractIdentifiers(args, custom);
    if (ids.length === 0)
      throw new GraphQLError('customer needs one identifier argument', {
        extensions: { code: 'INVALID_IDENTIFIER_EXCEPTION', classification: 'DataFetchingException' },
      });
    for (const id of ids) {
      const found = await this.identity.find(account, id);
      if (!found) continue;
      const { customerId, absorbed } = found;
      const customers = [customerId, ...absorbed];
      // Read when a field first asks for it (attributes, or audiences' filters, which count the
      // customer's events meanwhile), once.
      let profile: Promise<Readonly<Record<string, unknown>>> | undefined;
      const attributes = () =>
        (profile ??= this.profiles.get(account, customerId, absorbed).then((p) => p?.attributes ?? {}));
      return {
        attributes,
        events: (first) => this.recentEvents.recent({ account, customers, limit: first }),
        audiences: async (subset) => {
          const all = await this.segments.cached(account);
          const asked = subset ? all.filter((s) => subset.includes(s.id)) : all;
          const states = await evaluateAudiences(
            { account, ids: customers, attributes: attributes() },
            asked,
            await this.segments.customerTypes(account),
            this.counts,
            Date.now(),
          );
          return asked.map((segment) => ({ segment, state: states.get(segment.id)! }));
        },
      };
    }
    const first = ids[0]!;
    // The wording and codes of the original's answer, which Optimizely's SDKs recognise.
    throw new GraphQLError(`could not resolve _${first.kind} = ${first.value}`, {
      extensions: { code: 'INVALID_IDENTIFIER_EXCEPTION', classification: 'DataFetchingException' },
    });
  }
}

function requestOf(body: unknown): {
  query: string;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
} {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw ApiError.badRequest('the body must be a JSON object {query, variables?, operationName?}');
  const b = body as Record<string, unknown>;
  if (typeof b.query !== 'string' || b.query.trim() === '')
    throw ApiError.invalid([{ field: 'query', reason: 'is required: a GraphQL query' }]);
  if (b.query.length > MAX_QUERY_LENGTH)
    throw ApiError.invalid([{ field: 'query', reason: `must be at most ${MAX_QUERY_LENGTH} characters` }]);
  const variables = b.variables ?? undefined;
  if (variables !== undefined && (typeof variables !== 'object' || Array.isArray(variables)))
    throw ApiError.invalid([{ field: 'variables', reason: 'must be an object' }]);
  if (b.operationName !== undefined && b.operationName !== null && typeof b.operationName !== 'string')
    throw ApiError.invalid([{ field: 'operationName', reason: 'must be a string' }]);
  return {
    query: b.query,
    variables: variables as Record<string, unknown> | undefined,
    operationName: b.operationName ?? undefined,
  };
}
