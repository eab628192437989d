/**
 * The record rules of batch ingestion: each record kind's schema and field rules, compiled once
 * (BatchValidator) and shared by the HTTP API's batch pipes (libs/http-api) and the bulk-file loader
 * (libs/loader), so that a file's record is read by exactly the rules of the equivalent API call.
 */
export { eventsValidator, eventRule, type EventsContext } from './events.validator.js';
export { profilesValidator, customerRule, type ProfilesContext } from './profiles.validator.js';
export {
  productsValidator,
  orderUpdatesValidator,
  entitiesValidator,
  v2EventsValidator,
  v2ToV3,
  type EntityRecord,
  type EntitiesContext,
} from './commerce.validators.js';
export {
  consentValidator,
  reachabilityValidator,
  metadataValidator,
  consentRule,
  reachabilityRule,
  metadataRule,
  type IdentifierUpdatesContext,
} from './identifier-updates.validator.js';
export {
  consentUpdateSchema,
  metadataUpdateSchema,
  reachabilityUpdateSchema,
} from './identifier-updates.schemas.js';
