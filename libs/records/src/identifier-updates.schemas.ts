import { MAX_STRING, nullable, str } from '@cdp/contracts';
import { REACHABILITY_UPDATE_TYPES } from '@cdp/domain';

type Schema = Record<string, unknown>;

/**
 * Records of `POST /v3/consent`, `/v3/reachability` and `/v3/identifiers`, as the original API's Node
 * SDK declares them (`ConsentUpdate`, `ReachabilityUpdate`, `IdentifierMetadata`). Compiled once by
 * the batch validator, and the OpenAPI document's bodies.
 */
const identifier: Schema = {
  identifier_field_name: { type: 'string', minLength: 1, maxLength: 64 },
  identifier_value: { type: 'string', minLength: 1, maxLength: MAX_STRING },
};
/** Unix seconds (the SDK's form), or ISO 8601 text (what its campaign helpers pass on as given). */
const updateTs: Schema = nullable({ anyOf: [{ type: 'number' }, { type: 'string', maxLength: 64 }] });
const eventData: Schema = nullable({ type: 'object' });

/** An update of one identifier: the identifier, then `field` (required) and the fields that go with it. */
const identifierUpdate = (field: string, properties: Schema): Schema => ({
  type: 'object',
  required: ['identifier_field_name', 'identifier_value', field],
  properties: { ...identifier, ...properties },
});

export const consentUpdateSchema = identifierUpdate('consent', {
  consent: { type: 'boolean' },
  consent_update_reason: nullable(str),
  consent_update_ts: updateTs,
  event_data: eventData,
});

export const reachabilityUpdateSchema = identifierUpdate('reachable', {
  reachable: { type: 'boolean' },
  reachable_update_type: nullable({ type: 'string', enum: [...REACHABILITY_UPDATE_TYPES] }),
  reachable_update_reason: nullable(str),
  reachable_update_ts: updateTs,
  event_data: eventData,
});

export const metadataUpdateSchema = identifierUpdate('metadata', {
  metadata: {
    type: 'object',
    minProperties: 1,
    additionalProperties: nullable({ type: ['string', 'number', 'boolean'] }),
  },
});
