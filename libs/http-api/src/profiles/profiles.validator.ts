import { BatchValidator, profileSchema } from '@cdp/contracts';
import {
  IDENTIFIER_REQUIRED_REASON,
  normalizeProfile,
  readCustomFields,
  type CustomFields,
  type ProfileRecord,
} from '@cdp/domain';

type ProfileIn = { attributes: Record<string, unknown> };

/**
 * `POST /v3/profiles` records: the schema, then at least one usable identifier among the attributes.
 * The context is the account's custom customer fields, read by their types (undefined ones are dropped).
 */
export const profilesValidator = new BatchValidator<ProfileIn, ProfileRecord, CustomFields>(
  profileSchema,
  'profile',
  (input, index, custom) => {
    const customValues = readCustomFields(input.attributes, custom, 'attributes.');
    if (customValues.invalids.length) return customValues.invalids.map((i) => ({ event: index, ...i }));
    const record = normalizeProfile(input.attributes, customValues.values);
    if (Object.keys(record.identifiers).length === 0) {
      return [{ event: index, field: 'attributes', reason: IDENTIFIER_REQUIRED_REASON }];
    }
    return record;
  },
);
