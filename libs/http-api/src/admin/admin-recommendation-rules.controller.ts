import { Body, Controller, Get, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiTags } from '@nestjs/swagger';
import { AccountsService } from '@cdp/accounts';
import { ApiError } from '@cdp/contracts';
import { Auth } from '@cdp/http-common';
import { checkRules, RecommendationRulesService, type RecommendationRules } from '@cdp/recommendations';
import { SchemaRegistry } from '@cdp/schema';

const rulesSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    exclude_categories: {
      type: 'array',
      items: { type: 'string' },
      description: 'categories left out with everything beneath them (levels joined by " > ")',
    },
    require_image: { type: 'boolean', description: 'leave out products without image_url' },
    require_price: { type: 'boolean', description: 'leave out products without price' },
    min_price: { type: 'number' },
    max_price: { type: 'number' },
    require_true: {
      type: 'array',
      items: { type: 'string' },
      description: 'custom boolean product fields that must be true (e.g. in_stock)',
    },
  },
};

/**
 * An account's recommendation rules (spec "Recommendations": "default filtering rules are configured by
 * the operator of the account"), applied to every answer. PUT replaces them all; `{}` removes them.
 * Changes reach every API replica within 5 seconds.
 */
@ApiTags('admin')
@ApiBearerAuth()
@Auth('admin')
@Controller('admin/v1/accounts/:id/recommendation-rules')
export class AdminRecommendationRulesController {
  constructor(
    private readonly accounts: AccountsService,
    private readonly rules: RecommendationRulesService,
    private readonly schema: SchemaRegistry,
  ) {}

  @Get()
  async get(@Param('id') id: string): Promise<{ rules: RecommendationRules }> {
    await this.accounts.get(id); // 404 for an unknown account
    return { rules: await this.rules.read(id) };
  }

  @Put()
  @ApiBody({ schema: rulesSchema })
  async replace(@Param('id') id: string, @Body() body: unknown): Promise<{ rules: RecommendationRules }> {
    await this.accounts.get(id);
    const products = (await this.schema.read(id, true)).customFields('products');
    const booleans = new Set(Object.keys(products).filter((f) => products[f] === 'boolean'));
    const checked = checkRules(body, booleans);
    if ('problems' in checked) throw ApiError.invalid(checked.problems);
    return { rules: await this.rules.replace(id, checked.rules) };
  }
}
