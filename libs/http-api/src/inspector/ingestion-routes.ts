/**
 * The ingestion routes, by Fastify route pattern, and the kind of record each takes: what the event
 * inspector shows and what the console counts as rejected (libs/console-api's RejectionTap).
 */
export const INGESTION_ROUTES: Readonly<Record<string, string>> = {
  'POST /v3/events': 'events',
  'POST /v3/profiles': 'profiles',
  'POST /v3/objects/:object': 'objects',
  'POST /v3/objects/products': 'products',
  'POST /v3/objects/orders': 'orders',
  'POST /v2/entities': 'v2 entities',
  'POST /v2/events': 'v2 events',
  'POST /v3/lists/subscriptions': 'subscriptions',
  'POST /v3/optout': 'optout',
};
