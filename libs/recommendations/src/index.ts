export * from './recommender.port.js';
export * from './recommendation-rules.js';
export * from './recommendation-rules.service.js';
export { StoreRecommender } from './store-recommender.js';
export { RecommendationsRefresh } from './recommendations-refresh.js';
export { RecommendationsRefreshJob, REFRESH_INTERVAL_MS } from './recommendations-refresh.job.js';
export { RecommendationsWorkerModule } from './recommendations-worker.module.js';
export { INTERNAL_PRODUCT_COLUMNS } from './recommendation.query.js';
