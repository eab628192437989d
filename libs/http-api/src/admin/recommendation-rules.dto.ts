import { createParamDecorator, Injectable, type ExecutionContext, type PipeTransform } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsNumber, IsOptional } from 'class-validator';
import type { FastifyRequest } from 'fastify';
import { AccountsService } from '@cdp/accounts';
import { ApiError, MAX_STRING, type Invalid } from '@cdp/contracts';
import { CATEGORY_DELIMITER } from '@cdp/domain';
import {
  MAX_EXCLUDED_CATEGORIES,
  RULE_NAMES,
  checkRules,
  type RecommendationRules,
} from '@cdp/recommendations';
import { SchemaRegistry } from '@cdp/schema';
import { Obeys } from '../validation/constraints.js';
import { EnvelopeValidationPipe } from '../validation/envelope-validation.pipe.js';

const CATEGORIES_REASON = `must be an array of at most ${MAX_EXCLUDED_CATEGORIES} non-empty categories (levels joined by "${CATEGORY_DELIMITER}")`;
const FIELDS_REASON = 'must be an array of custom boolean product fields';
const FINITE = { allowNaN: false, allowInfinity: false };

const categoriesProblem = (value: unknown) =>
  Array.isArray(value) &&
  value.length <= MAX_EXCLUDED_CATEGORIES &&
  value.every((c) => typeof c === 'string' && c.trim() !== '' && c.length <= MAX_STRING)
    ? undefined
    : CATEGORIES_REASON;

/**
 * `PUT /admin/v1/accounts/:id/recommendation-rules` (libs/recommendations RecommendationRules): the
 * shape of each rule. Whether `require_true` names the account's boolean product fields needs its
 * schema: RecommendationRulesPipe checks it, in the same answer.
 */
export class RecommendationRulesDto implements RecommendationRules {
  @ApiPropertyOptional({
    type: [String],
    maxItems: MAX_EXCLUDED_CATEGORIES,
    description: `categories left out with everything beneath them (levels joined by "${CATEGORY_DELIMITER}")`,
  })
  @IsOptional()
  @Obeys('isCategoryList', categoriesProblem)
  exclude_categories?: string[];

  @ApiPropertyOptional({ description: 'leave out products without image_url' })
  @IsOptional()
  @IsBoolean({ message: 'must be a boolean' })
  require_image?: boolean;

  @ApiPropertyOptional({ description: 'leave out products without price' })
  @IsOptional()
  @IsBoolean({ message: 'must be a boolean' })
  require_price?: boolean;

  @ApiPropertyOptional({ description: 'only products priced at least this' })
  @IsOptional()
  @IsNumber(FINITE, { message: 'must be a number' })
  min_price?: number;

  @ApiPropertyOptional({ description: 'only products priced at most this; not below min_price' })
  @IsOptional()
  @IsNumber(FINITE, { message: 'must be a number' })
  @Obeys('isNotBelowMin', (max, { min_price: min }) =>
    typeof min === 'number' && typeof max === 'number' && max < min
      ? 'must not be below min_price'
      : undefined,
  )
  max_price?: number;

  @ApiPropertyOptional({
    type: [String],
    description: 'custom boolean product fields that must be true (e.g. in_stock)',
  })
  @IsOptional()
  @Obeys('isFieldList', (v) =>
    Array.isArray(v) && v.every((f) => typeof f === 'string') ? undefined : FIELDS_REASON,
  )
  require_true?: string[];
}

/** Unknown properties are refused in the same answer as bad rules. */
const RulesValidation = new EnvelopeValidationPipe({
  unknownFieldReason: `is not a rule (${RULE_NAMES.join(', ')})`,
});

/** The body of the rules route with the account of its path. */
export interface RulesRequest {
  account: string;
  body: unknown;
}

export const RulesBody = createParamDecorator((_: unknown, ctx: ExecutionContext): RulesRequest => {
  const request = ctx.switchToHttp().getRequest<FastifyRequest<{ Params: { id: string } }>>();
  return { account: request.params.id, body: request.body };
});

/** The invalids of the rules' shape, or the rules when their shape is right. */
async function shapeOf(body: unknown): Promise<{ invalids: Invalid[] } | { rules: RecommendationRules }> {
  try {
    const rules = await RulesValidation.transform(body, { type: 'body', metatype: RecommendationRulesDto });
    return { rules: rules as RecommendationRules };
  } catch (err) {
    if (err instanceof ApiError && 'invalids' in err.detail) return { invalids: err.detail.invalids };
    throw err;
  }
}

/**
 * Validates the rules route's body: 404 for an unknown account, then the DTO's shape and the account's
 * boolean product fields together, every problem in one answer. Hands the route the rules as stored.
 */
@Injectable()
export class RecommendationRulesPipe implements PipeTransform<RulesRequest, Promise<RecommendationRules>> {
  constructor(
    private readonly accounts: AccountsService,
    private readonly schema: SchemaRegistry,
  ) {}

  async transform({ account, body }: RulesRequest): Promise<RecommendationRules> {
    await this.accounts.get(account);
    // An empty body is no body (API notes): the rules are an object, as the validation pipe says of any body.
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw ApiError.invalid([{ field: 'body', reason: 'must be an object' }]);
    const products = (await this.schema.read(account, true)).customFields('products');
    const booleans = new Set(Object.keys(products).filter((f) => products[f] === 'boolean'));
    const shape = await shapeOf(body);
    const invalids = 'invalids' in shape ? [...shape.invalids] : [];
    // require_true of the right shape is checked against the schema even when other rules are wrong.
    const sent = 'rules' in shape ? shape.rules : (body as RecommendationRules);
    const fieldsOk = !invalids.some((i) => i.field === 'require_true');
    const checked = checkRules(fieldsOk ? sent : { ...sent, require_true: [] }, booleans);
    if ('problems' in checked) invalids.push(...checked.problems);
    if (invalids.length || 'problems' in checked) throw ApiError.invalid(invalids);
    return checked.rules;
  }
}
