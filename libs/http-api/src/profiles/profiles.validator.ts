import { BatchValidator, profileSchema, type Invalid } from '@cdp/contracts';
import {
  customerFieldProblems,
  IDENTIFIER_REQUIRED_REASON,
  normalizeProfile,
  type ProfileRecord,
} from '@cdp/domain';

/**
 * `POST /v3/profiles` records: the schema, the customer table's field rules, then at least one usable
 * identifier among the attributes.
 */
export const profilesValidator = new BatchValidator<{ attributes: Record<string, unknown> }, ProfileRecord>(
  profileSchema,
  'profile',
  (input, index) => {
    const invalids: Invalid[] = customerFieldProblems(input.attributes).map(({ field, reason }) => ({
      event: index,
      field: `attributes.${field}`,
      reason,
    }));
    const record = normalizeProfile(input.attributes);
    if (Object.keys(record.identifiers).length === 0) {
      invalids.push({ event: index, field: 'attributes', reason: IDENTIFIER_REQUIRED_REASON });
    }
    return invalids.length ? invalids : record;
  },
);
