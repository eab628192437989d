import {
  Controller,
  createParamDecorator,
  Get,
  Put,
  Req,
  UseGuards,
  type ExecutionContext,
} from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Auth } from '@cdp/http-common';
import { RecommendationRulesPipe, type RulesRequest } from '@cdp/http-api/admin';
import { RecommendationRulesService, type RecommendationRules } from '@cdp/recommendations';
import { SchemaRegistry } from '@cdp/schema';
import { ConsoleSessionGuard, type ConsoleRequest } from './console-session.guard.js';

/** The rules body with the session's account (the pipe is the admin route's). */
const SessionRulesBody = createParamDecorator((_: unknown, ctx: ExecutionContext): RulesRequest => {
  const request = ctx.switchToHttp().getRequest<ConsoleRequest & { body: unknown }>();
  return { account: request.consoleSession!.account.id, body: request.body };
});

export interface RulesPageView {
  rules: RecommendationRules;
  /** The account's custom boolean product fields: what `require_true` may name. */
  boolean_fields: string[];
}

/**
 * The account's recommendation rules in the console (issue 18: "configured by the operator of the
 * account … through the admin API and the console's settings"): the same service and checks as the
 * admin route, for the session's account only.
 */
@ApiExcludeController()
@Auth('none')
@UseGuards(ConsoleSessionGuard)
@Controller('console/api/recommendation-rules')
export class ConsoleRecommendationRulesController {
  constructor(
    private readonly rules: RecommendationRulesService,
    private readonly schema: SchemaRegistry,
  ) {}

  @Get()
  async get(@Req() request: ConsoleRequest): Promise<RulesPageView> {
    const account = request.consoleSession!.account.id;
    return { rules: await this.rules.read(account), boolean_fields: await this.booleanFields(account) };
  }

  /** Replaces them all (`{}` removes them), refused with the admin route's reasons. */
  @Put()
  async replace(
    @Req() request: ConsoleRequest,
    @SessionRulesBody(RecommendationRulesPipe) rules: RecommendationRules,
  ): Promise<RulesPageView> {
    const account = request.consoleSession!.account.id;
    return {
      rules: await this.rules.replace(account, rules),
      boolean_fields: await this.booleanFields(account),
    };
  }

  private async booleanFields(account: string): Promise<string[]> {
    const fields = (await this.schema.read(account, true)).customFields('products');
    return Object.keys(fields).filter((f) => fields[f] === 'boolean');
  }
}
