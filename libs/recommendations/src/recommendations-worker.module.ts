import { Module } from '@nestjs/common';
import { RecommendationsRefreshJob } from './recommendations-refresh.job.js';

/** What runs where the store is written: the refresh of the recommendation tables. */
@Module({ providers: [RecommendationsRefreshJob], exports: [RecommendationsRefreshJob] })
export class RecommendationsWorkerModule {}
