import { Injectable } from '@nestjs/common';
import { ApiError } from '@cdp/contracts';
import { CachedRecords, MetadataCacheClock, MetadataStore } from '@cdp/metadata';
import type { Allowance } from './rate-limiter.port.js';

/** The API families a route can be counted against (spec "Limits" names them). */
export const RATE_LIMIT_FAMILIES = [
  'profiles',
  'compliance',
  'events',
  'objects',
  'lists',
  'exports',
  'recommendations',
  'schema',
] as const;
export type RateLimitFamily = (typeof RATE_LIMIT_FAMILIES)[number];

/** Requests per second, or no limit. */
export type Rate = number | 'unlimited';

/**
 * Default rates (spec "Limits"): profiles 10/s, compliance 1/s, the others unlimited. Rates of
 * exports, recommendations and schema are "not shown": unlimited unless an account's plan says so.
 */
export const DEFAULT_RATES: Readonly<Record<RateLimitFamily, Rate>> = {
  profiles: 10,
  compliance: 1,
  events: 'unlimited',
  objects: 'unlimited',
  lists: 'unlimited',
  exports: 'unlimited',
  recommendations: 'unlimited',
  schema: 'unlimited',
};

/**
 * What an account's plan may say of a family (spec "Authentication" rule 6: "Default, No Access or a named
 * custom plan"): a rate, or `no_access`, which makes the family answer 403.
 */
export type PlanSetting = Rate | 'no_access';
export const NO_ACCESS = 'no_access';

/** An account's plan: the families whose setting differs from the default. */
export type RateOverrides = Partial<Record<RateLimitFamily, PlanSetting>>;

/** How the console names a family's plan. */
export function planName(setting: PlanSetting | undefined): 'Default' | 'No Access' | 'Custom' {
  return setting === undefined ? 'Default' : setting === NO_ACCESS ? 'No Access' : 'Custom';
}

const BUCKET = 'rate_limits';
/** How long an API replica uses the overrides it read; a change reaches every replica within this. */
export const RATE_POLICY_CACHE_MS = 5_000;
export const MAX_RATE = 1_000_000;

export const RATE_REASON = `must be a whole number of requests per second (1 to ${MAX_RATE}), "unlimited", "no_access", or null for the default`;

/** A rate an operator may set for a family: null goes back to the default. */
export function isRateSetting(rate: unknown): rate is PlanSetting | null {
  return (
    rate === null ||
    rate === 'unlimited' ||
    rate === NO_ACCESS ||
    (typeof rate === 'number' && Number.isInteger(rate) && rate >= 1 && rate <= MAX_RATE)
  );
}

export function isRateLimitFamily(name: string): name is RateLimitFamily {
  return (RATE_LIMIT_FAMILIES as readonly string[]).includes(name);
}

/** The bucket of a rate: burst = one second's allowance (spec/NOTES.md "Limits"). */
export function allowanceOf(rate: Rate): Allowance | undefined {
  return rate === 'unlimited' ? undefined : { rate, burst: rate };
}

/**
 * A change of some families' rates, null going back to the default. Checked once, at the route
 * (`RateLimitsPatchDto`: known families, `isRateSetting`, at least one family).
 */
export type RatePatch = Partial<Record<RateLimitFamily, PlanSetting | null>>;

/** Each account's rates: the defaults, changed per account through the admin API. */
@Injectable()
export class RateLimitPolicy {
  private readonly records: CachedRecords<RateOverrides>;

  constructor(metadata: MetadataStore, @MetadataCacheClock() now?: () => number) {
    this.records = new CachedRecords(metadata, BUCKET, {
      ttlMs: RATE_POLICY_CACHE_MS,
      view: (found) => found?.value ?? {},
      now,
    });
  }

  /**
   * The bucket a request of this family takes from, or undefined when the family is not limited. A
   * family the account's plan gives No Access to is refused here: 403, saying so.
   */
  async allowance(account: string, family: RateLimitFamily): Promise<Allowance | undefined> {
    const overrides = await this.cachedOverrides(account);
    const setting = overrides[family] ?? DEFAULT_RATES[family];
    if (setting === NO_ACCESS) {
      throw ApiError.forbidden(
        `the ${family} API is not available to this account: its usage plan is No Access (the operator can change it)`,
      );
    }
    return allowanceOf(setting);
  }

  overrides(account: string): Promise<RateOverrides> {
    return this.records.read(account);
  }

  /** Every family's rate for the account, defaults included. */
  effective(overrides: RateOverrides): Record<RateLimitFamily, PlanSetting> {
    return Object.fromEntries(
      RATE_LIMIT_FAMILIES.map((f) => [f, overrides[f] ?? DEFAULT_RATES[f]]),
    ) as Record<RateLimitFamily, PlanSetting>;
  }

  /**
   * Changes some families' rates: a positive whole number of requests per second, `"unlimited"`, or
   * null to go back to the default. Returns the account's overrides after the change.
   */
  change(account: string, patch: RatePatch): Promise<RateOverrides> {
    const checked = Object.entries(patch) as [RateLimitFamily, PlanSetting | null][];
    return this.records.update(account, (found) => {
      const next: RateOverrides = { ...(found?.value ?? {}) };
      for (const [family, rate] of checked) {
        if (rate === null) delete next[family];
        else next[family] = rate;
      }
      return next;
    });
  }

  private async cachedOverrides(account: string): Promise<RateOverrides> {
    try {
      return await this.records.cached(account);
    } catch {
      // The metadata store away and never read for this account: limit by the defaults.
      return {};
    }
  }
}
