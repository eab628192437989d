import { Module } from '@nestjs/common';
import { RecommendationRulesService } from './recommendation-rules.service.js';

/**
 * The accounts' recommendation rules, provided once for the process: the API's routes and the console
 * read one cache. Its MetadataStore comes from the (global) drivers module.
 */
@Module({ providers: [RecommendationRulesService], exports: [RecommendationRulesService] })
export class RecommendationRulesModule {}
