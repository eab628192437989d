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
 * Splits sent attributes into identifiers and customer fields and drops fields the account has not
 * defined. `name` is derived where the profile is folded (applyProfileUpdate): only there is the
 * stored profile known.
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

/** The name first and last name give ('Ada Lovelace', either alone); '' when neither is set. */
export function nameFromParts(attributes: Readonly<Attributes>): string {
  return [attributes.first_name, attributes.last_name]
    .filter((part) => typeof part === 'string' && part !== '')
    .join(' ');
}

/**
 * Applies an additive update to a profile and keeps its `name` as the spec's customer table says ("when
 * absent but first_name and/or last_name are given, it is populated from them"; first and last name are
 * never parsed from it): the name follows first and last name while it is absent or is exactly what they
 * give; a name that differs was given by the caller and stays until an update sends `name` again (null
 * unsets it, and it follows first and last name again). The Redis driver's cdp_apply folds the same rule.
 */
export function applyProfileUpdate(
  current: Readonly<Attributes>,
  update: Readonly<AttributeUpdate>,
): Attributes {
  const next = applyAttributeUpdate(current, update);
  const sent = Object.hasOwn(update, 'name');
  if (sent && update.name !== null) return next;
  if (!sent && current.name !== undefined && current.name !== nameFromParts(current)) return next;
  const name = nameFromParts(next);
  if (name) next.name = name;
  else delete next.name;
  return next;
}
