import { Injectable } from '@nestjs/common';
import { MetadataCache, MetadataCacheClock, MetadataStore, updateWithRetry } from '@cdp/metadata';
import type { RecommendationRules } from './recommendation-rules.js';

const BUCKET = 'recommendation_rules';
/** How long an API replica uses the rules it read; a change reaches every replica within this. */
export const RULES_CACHE_MS = 5_000;

/** Each account's recommendation rules, set by the operator through the admin API. */
@Injectable()
export class RecommendationRulesService {
  private readonly cache: MetadataCache<RecommendationRules>;

  constructor(
    private readonly metadata: MetadataStore,
    @MetadataCacheClock() now?: () => number,
  ) {
    this.cache = new MetadataCache({ ttlMs: RULES_CACHE_MS, load: (account) => this.read(account), now });
  }

  async read(account: string): Promise<RecommendationRules> {
    return (await this.metadata.get<RecommendationRules>(BUCKET, account))?.value ?? {};
  }

  /** The rules a request applies (a copy at most RULES_CACHE_MS old). */
  cached(account: string): Promise<RecommendationRules> {
    return this.cache.get(account);
  }

  /** Replaces the account's rules (checked by the caller). */
  async replace(account: string, rules: RecommendationRules): Promise<RecommendationRules> {
    await updateWithRetry<RecommendationRules>(this.metadata, BUCKET, account, () => rules);
    this.cache.set(account, rules);
    return rules;
  }
}
