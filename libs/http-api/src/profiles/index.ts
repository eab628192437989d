/**
 * The profile read of `GET /v3/profiles`, for the console's customer page (libs/console-api), which finds
 * a customer as that route does; both import ProfileLookupModule, its one provider.
 */
export { ProfileLookup, type FoundCustomer } from './profile-lookup.service.js';
export { ProfileLookupModule } from './profile-lookup.module.js';
