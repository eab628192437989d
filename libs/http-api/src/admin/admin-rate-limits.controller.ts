import { Body, Controller, Get, Param, Patch } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiTags } from '@nestjs/swagger';
import { AccountsService } from '@cdp/accounts';
import {
  DEFAULT_RATES,
  RATE_LIMIT_FAMILIES,
  RateLimitPolicy,
  planName,
  type PlanSetting,
  type RateLimitFamily,
  type RateOverrides,
} from '@cdp/rate-limits';
import { Auth } from '@cdp/http-common';
import { RateLimitsPatchDto, RateLimitsValidation, rateLimitsPatchSchema } from './admin.dto.js';

interface RateLimitsView {
  /** Requests per second of every family, "unlimited" or "no_access": what the account gets now. */
  rates: Record<RateLimitFamily, PlanSetting>;
  /** Each family's usage plan: Default, No Access or Custom. */
  plans: Record<RateLimitFamily, string>;
  /** The families whose rate the operator changed for this account. */
  overrides: RateOverrides;
  defaults: Readonly<Record<RateLimitFamily, PlanSetting>>;
}

/**
 * An account's plan (spec "Limits": "accounts can have custom plans"): its rate per API family, or
 * `no_access` (spec "Authentication" rule 6: No Access), which makes that family answer 403.
 * Changes reach every API replica within 5 seconds.
 */
@ApiTags('admin')
@ApiBearerAuth()
@Auth('admin')
@Controller('admin/v1/accounts/:id/rate-limits')
export class AdminRateLimitsController {
  constructor(
    private readonly accounts: AccountsService,
    private readonly policy: RateLimitPolicy,
  ) {}

  @Get()
  async get(@Param('id') id: string): Promise<RateLimitsView> {
    await this.accounts.get(id); // 404 for an unknown account
    return this.view(await this.policy.overrides(id));
  }

  @Patch()
  @ApiBody({ description: 'family → rate; unknown families are refused', schema: rateLimitsPatchSchema })
  async change(
    @Param('id') id: string,
    @Body(RateLimitsValidation) body: RateLimitsPatchDto,
  ): Promise<RateLimitsView> {
    await this.accounts.get(id);
    return this.view(await this.policy.change(id, body));
  }

  private view(overrides: RateOverrides): RateLimitsView {
    const plans = Object.fromEntries(RATE_LIMIT_FAMILIES.map((f) => [f, planName(overrides[f])])) as Record<
      RateLimitFamily,
      string
    >;
    return { rates: this.policy.effective(overrides), plans, overrides, defaults: DEFAULT_RATES };
  }
}
