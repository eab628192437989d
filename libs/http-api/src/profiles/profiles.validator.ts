import { BatchValidator, profileSchema, type Invalid } from '@cdp/contracts';
import {
  customerFieldProblems,
  IDENTIFIER_REQUIRED_REASON,
  normalizeProfile,
  readCustomFields,
  type CustomFields,
  type ProfileRecord,
} from '@cdp/domain';
import { BatchValidationPipe } from '../ingest/batch-validation.pipe.js';

type ProfileIn = { attributes: Record<string, unknown> };

/**
 * `POST /v3/profiles` records: the schema, the customer table's field rules, then at least one usable
 * identifier among the attributes. The context is the account's custom customer fields, read by their
 * types (undefined ones are dropped).
 */
export const profilesValidator = new BatchValidator<ProfileIn, ProfileRecord, CustomFields>(
  profileSchema,
  'profile',
  (input, index, custom) => {
    const invalids: Invalid[] = customerFieldProblems(input.attributes).map(({ field, reason }) => ({
      event: index,
      field: `attributes.${field}`,
      reason,
    }));
    const customValues = readCustomFields(input.attributes, custom, 'attributes.');
    for (const invalid of customValues.invalids) invalids.push({ event: index, ...invalid });
    const record = normalizeProfile(input.attributes, customValues.values);
    if (Object.keys(record.identifiers).length === 0) {
      invalids.push({ event: index, field: 'attributes', reason: IDENTIFIER_REQUIRED_REASON });
    }
    return invalids.length ? invalids : record;
  },
);

/** The pipe of `POST /v3/profiles`: the account's custom customer fields. */
export const ProfilesBatch = BatchValidationPipe(profilesValidator, async (schema, request) =>
  (await schema.read(request.account)).customFields('customers'),
);
