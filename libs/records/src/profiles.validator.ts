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

/**
 * A customer's fields by the rules of `POST /v3/profiles`: the customer table's field rules, the custom
 * fields by their types, at least one usable identifier. Problems are named under `prefix` (where the
 * caller's body holds the fields: `attributes.` here, `data.` in `POST /v2/entities`).
 */
export function customerRule(
  fields: Record<string, unknown>,
  index: number,
  { custom, customIds }: ProfilesContext,
  prefix: string,
): ProfileRecord | Invalid[] {
  const invalids: Invalid[] = customerFieldProblems(fields).map(({ field, reason }) => ({
    event: index,
    field: `${prefix}${field}`,
    reason,
  }));
  const customValues = readCustomFields(fields, custom, prefix);
  for (const invalid of customValues.invalids) invalids.push({ event: index, ...invalid });
  const record = normalizeProfile(fields, customValues.values, customIds);
  if (Object.keys(record.identifiers).length === 0) {
    invalids.push({ event: index, field: prefix.slice(0, -1), reason: IDENTIFIER_REQUIRED_REASON });
  }
  return invalids.length ? invalids : record;
}

export const profilesValidator = new BatchValidator<ProfileIn, ProfileRecord, ProfilesContext>(
  profileSchema,
  'profile',
  (input, index, context) => customerRule(input.attributes, index, context, 'attributes.'),
);
