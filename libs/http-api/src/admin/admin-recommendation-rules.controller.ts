import { Controller, Get, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiTags } from '@nestjs/swagger';
import { AccountsService } from '@cdp/accounts';
import { Auth } from '@cdp/http-common';
import { RecommendationRulesService, type RecommendationRules } from '@cdp/recommendations';
import { RecommendationRulesDto, RecommendationRulesPipe, RulesBody } from './recommendation-rules.dto.js';

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
  ) {}

  @Get()
  async get(@Param('id') id: string): Promise<{ rules: RecommendationRules }> {
    await this.accounts.get(id); // 404 for an unknown account
    return { rules: await this.rules.read(id) };
  }

  @Put()
  @ApiBody({ type: RecommendationRulesDto })
  async replace(
    @Param('id') id: string,
    @RulesBody(RecommendationRulesPipe) rules: RecommendationRules,
  ): Promise<{ rules: RecommendationRules }> {
    return { rules: await this.rules.replace(id, rules) };
  }
}
