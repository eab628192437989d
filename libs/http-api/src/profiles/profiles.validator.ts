import { BatchValidator, profileSchema, type Invalid } from '@cdp/contracts';
import {
  customerFieldProblems,
  IDENTIFIER_REQUIRED_REASON,
  normalizeProfile,
  readCustomFields,
  type CustomFields,
  type CustomIdentifierNames,
  type ProfileRecord,
} from '@cdp/domain';
import { BatchValidationPipe } from '../ingest/batch-validation.pipe.js';

type ProfileIn = { attributes: Record<string, unknown> };

/**
 * `POST /v3/profiles` records: the schema, the customer table's field rules, then at least one usable
 * identifier among the attributes. The context is the account's custom customer fields, read by their
 * types (undefined ones are dropped).
 */
export interface ProfilesContext {
  custom: CustomFields;
  /** The account's custom identifiers: identifiers, and custom customer fields too. */
  customIds: CustomIdentifierNames;
}

export const profilesValidator = new BatchValidator<ProfileIn, ProfileRecord, ProfilesContext>(
  profileSchema,
  'profile',
  (input, index, { custom, customIds }) => {
    const invalids: Invalid[] = customerFieldProblems(input.attributes).map(({ field, reason }) => ({
      event: index,
      field: `attributes.${field}`,
      reason,
    }));
    const customValues = readCustomFields(input.attributes, custom, 'attributes.');
    for (const invalid of customValues.invalids) invalids.push({ event: index, ...invalid });
    const record = normalizeProfile(input.attributes, customValues.values, customIds);
    if (Object.keys(record.identifiers).length === 0) {
      invalids.push({ event: index, field: 'attributes', reason: IDENTIFIER_REQUIRED_REASON });
    }
    return invalids.length ? invalids : record;
  },
);

/** The pipe of `POST /v3/profiles`: the account's custom customer fields. */
export const ProfilesBatch = BatchValidationPipe(profilesValidator, async (schema, request) => {
  const account = await schema.read(request.account);
  return { custom: account.customFields('customers'), customIds: account.identifierNames };
});
