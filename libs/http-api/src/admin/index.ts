/**
 * The recommendation rules' body and its pipe, for the console's own rules route (libs/console-api),
 * which answers as `PUT /admin/v1/accounts/{id}/recommendation-rules` does.
 */
export { RecommendationRulesPipe, type RulesRequest } from './recommendation-rules.dto.js';
