import { canonicalCustomerValue } from './customer-fields.js';
import { readBoolean, type CustomValue } from './custom-fields.js';
import {
  collectIdentifiers,
  isIdentifierField,
  isJunkIdentifierValue,
  type CustomIdentifierNames,
} from './identifiers.js';

/** Customer fields of the spec's customer table, plus the consent flag `opted_in`. */
export const CUSTOMER_FIELDS: Readonly<Record<string, 'string' | 'boolean'>> = {
  customer_id: 'string',
  email: 'string',
  name: 'string',
  first_name: 'string',
  last_name: 'string',
  phone: 'string',
  street1: 'string',
  street2: 'string',
  city: 'string',
  state: 'string',
  zip: 'string',
  country: 'string',
  timezone: 'string',
  gender: 'string',
  image_url: 'string',
  opted_in: 'boolean',
};

/** Numbers come from the account's custom fields (number, timestamp as unix seconds). */
export type AttributeValue = string | boolean | number;
/** A profile's stored attributes. */
export type Attributes = Record<string, AttributeValue>;
/** An additive update: a value sets a field, null unsets it (spec "Entities (v2)": null or "" unsets). */
export type AttributeUpdate = Record<string, AttributeValue | null>;

/** A profile update as it travels from the API to the processor. */
export interface ProfileRecord {
  identifiers: Record<string, string | string[]>;
  attributes: AttributeUpdate;
  dropped?: string[];
}

/**
 * Splits sent attributes into identifiers and customer fields, drops fields the account has not
 * defined, and derives `name` from first/last name when it is absent (never the other way round).
 */
export function normalizeProfile(
  sent: Readonly<Record<string, unknown>>,
  /** The account's custom customer fields, already read by their type (readCustomFields); kept, not dropped. */
  custom: Readonly<Record<string, CustomValue | null>> = {},
  /**
   * The account's custom identifiers: each is also a custom customer field, so its value is both an
   * identifier and an attribute of the profile.
   */
  customIds: CustomIdentifierNames = new Set(),
): ProfileRecord {
  const attributes: AttributeUpdate = {};
  const dropped: string[] = [];
  for (const [field, value] of Object.entries(sent)) {
    if (value === undefined) continue;
    // A junk identifier value identifies nobody; stored as an attribute it would pretend to.
    if (
      isIdentifierField(field, customIds) &&
      typeof value === 'string' &&
      value !== '' &&
      isJunkIdentifierValue(value)
    )
      continue;
    if (Object.hasOwn(CUSTOMER_FIELDS, field)) {
      attributes[field] =
        value === '' || value === null
          ? null
          : CUSTOMER_FIELDS[field] === 'boolean'
            ? readBoolean(value)!
            : typeof value === 'string'
              ? canonicalCustomerValue(field, value)
              : (value as AttributeValue);
    } else if (Object.hasOwn(custom, field)) {
      attributes[field] = custom[field]!;
    } else if (!isIdentifierField(field, customIds)) {
      dropped.push(field);
    }
  }
  if (!('name' in sent) && (typeof sent.first_name === 'string' || typeof sent.last_name === 'string')) {
    const name = [sent.first_name, sent.last_name].filter((p) => typeof p === 'string' && p !== '').join(' ');
    if (name) attributes.name = name;
  }
  const identifiers = collectIdentifiers(sent, customIds);
  const record: ProfileRecord = { identifiers, attributes };
  if (dropped.length) record.dropped = dropped;
  return record;
}

/** Applies an additive update to a profile: supplied fields change, null removes, the rest stays. */
export function applyAttributeUpdate(
  current: Readonly<Attributes>,
  update: Readonly<AttributeUpdate>,
): Attributes {
  const next: Attributes = { ...current };
  for (const [field, value] of Object.entries(update)) {
    if (value === null) delete next[field];
    else next[field] = value;
  }
  return next;
}
