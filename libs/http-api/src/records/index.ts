/**
 * The per-record rules of the batch ingestion routes, for the bulk-file loader (libs/loader): a file's
 * record is read by exactly the rules of the equivalent API call, and gets the same normalisation.
 */
export { eventsValidator, eventRule, type EventsContext } from '../events/events.validator.js';
export { profilesValidator } from '../profiles/profiles.validator.js';
export { productsValidator, v2EventsValidator } from '../commerce/commerce.validators.js';
