import { Controller, Get, Query, UsePipes } from '@nestjs/common';
import { ApiHeader, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Principal } from '@cdp/accounts';
import { ApiError } from '@cdp/contracts';
import { extractIdentifiers, PRODUCT_FIELDS, type CustomIdentifierNames } from '@cdp/domain';
import { Auth } from '@cdp/http-common';
import { IdentityIndex } from '@cdp/identity';
import { RecommendationRulesService, Recommender, type RecommendedProduct } from '@cdp/recommendations';
import { SchemaRegistry } from '@cdp/schema';
import { CurrentPrincipal } from '../auth/principal.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { DEFAULT_LIMIT, MAX_CONTEXT_PRODUCTS, RecommendationsQueryDto } from './recommendations.dto.js';

/**
 * Product recommendations (spec "Recommendations"; docs/api-notes.md "Recommendations" for the semantics). The
 * API resolves the customer and the account's rules; the ranking runs where the store is.
 */
@ApiTags('recommendations')
@ApiHeader({ name: 'x-api-key', required: true })
@RateLimit('recommendations')
@UsePipes(EnvelopeValidation)
@Controller('v3/recommendations')
export class RecommendationsController {
  constructor(
    private readonly identity: IdentityIndex,
    private readonly schema: SchemaRegistry,
    private readonly rules: RecommendationRulesService,
    private readonly recommender: Recommender,
  ) {}

  @Get('products')
  @Auth('public')
  @ApiQuery({ name: 'svc_alias_NAME', required: false, description: 'any alias, NAME being the alias name' })
  @ApiResponse({
    status: 200,
    description:
      'array of product records (every base and custom product field) with recommendation_type: personal, contextual or best_sellers; [] when there is nothing to recommend',
  })
  async products(
    @Query() query: RecommendationsQueryDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<RecommendedProduct[]> {
    const account = principal.account;
    const schema = await this.schema.read(account);
    const custom = schema.customFields('products');
    const fields = [...Object.keys(PRODUCT_FIELDS), ...Object.keys(custom)];
    if (query.sort !== undefined && !fields.includes(query.sort)) {
      throw ApiError.invalid([{ field: 'sort', reason: 'is not a product field' }]);
    }
    const productIds = contextIds(query.product_ids);
    const [customer, rules] = await Promise.all([
      this.customer(account, query as Record<string, unknown>, schema.identifierNames),
      this.rules.cached(account),
    ]);
    const products = await this.recommender.recommend({
      account,
      customer,
      productIds,
      limit: query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit),
      sort: query.sort,
      order: query.order ?? (query.sort === undefined ? 'desc' : 'asc'),
      rules,
    });
    // Every field of the account's products, null where the product has no value (or no column yet).
    return products.map((p) => {
      const record: Record<string, unknown> = {};
      for (const f of fields) record[f] = p[f] ?? null;
      return { ...record, ...p };
    });
  }

  /**
   * The first identifier that names a customer (customer_id, email, then the others, the account's
   * custom identifiers among them), or nobody.
   */
  private async customer(
    account: string,
    query: Record<string, unknown>,
    custom: CustomIdentifierNames,
  ): Promise<string | undefined> {
    for (const id of extractIdentifiers(query, custom)) {
      const found = await this.identity.lookup(account, id);
      if (found) return found;
    }
    return undefined;
  }
}

/** The page's product ids: comma-separated, blanks ignored, each at most 1024 characters. */
function contextIds(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  const ids = [
    ...new Set(
      raw
        .split(',')
        .map((id) => id.trim())
        .filter((id) => id !== ''),
    ),
  ];
  if (ids.length > MAX_CONTEXT_PRODUCTS || ids.some((id) => id.length > 1024)) {
    throw ApiError.invalid([
      {
        field: 'product_ids',
        reason: `must name at most ${MAX_CONTEXT_PRODUCTS} product ids of at most 1024 characters`,
      },
    ]);
  }
  return ids;
}
