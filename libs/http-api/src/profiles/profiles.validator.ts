import { BatchValidator, profileSchema } from '@cdp/contracts';
import { IDENTIFIER_REQUIRED_REASON, normalizeProfile, type ProfileRecord } from '@cdp/domain';

/** `POST /v3/profiles` records: the schema, then at least one usable identifier among the attributes. */
export const profilesValidator = new BatchValidator<{ attributes: Record<string, unknown> }, ProfileRecord>(
  profileSchema,
  'profile',
  (input, index) => {
    const record = normalizeProfile(input.attributes);
    if (Object.keys(record.identifiers).length === 0) {
      return [{ event: index, field: 'attributes', reason: IDENTIFIER_REQUIRED_REASON }];
    }
    return record;
  },
);
