import { Injectable } from '@nestjs/common';
import { CachedRecords, MetadataCacheClock, MetadataStore } from '@cdp/metadata';
import type { RecommendationRules } from './recommendation-rules.js';

const BUCKET = 'recommendation_rules';
/** How long an API replica uses the rules it read; a change reaches every replica within this. */
export const RULES_CACHE_MS = 5_000;

/** Each account's recommendation rules, set by the operator through the admin API. */
@Injectable()
export class RecommendationRulesService {
  private readonly rules: CachedRecords<RecommendationRules>;

  constructor(metadata: MetadataStore, @MetadataCacheClock() now?: () => number) {
    this.rules = new CachedRecords(metadata, BUCKET, {
      ttlMs: RULES_CACHE_MS,
      view: (found) => found?.value ?? {},
      now,
    });
  }

  read(account: string): Promise<RecommendationRules> {
    return this.rules.read(account);
  }

  /** The rules a request applies (a copy at most RULES_CACHE_MS old). */
  cached(account: string): Promise<RecommendationRules> {
    return this.rules.cached(account);
  }

  /** Replaces the account's rules (checked by the caller). */
  replace(account: string, rules: RecommendationRules): Promise<RecommendationRules> {
    return this.rules.update(account, () => rules);
  }
}
