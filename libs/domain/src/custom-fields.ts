import { parseTimestamp } from './timestamps.js';

/**
 * Types of account-defined fields (spec "Schema resources": `number`, `timestamp`, `text`, `boolean`;
 * the examples write `string` for text, so both are accepted and mean the same).
 */
export const CUSTOM_FIELD_TYPES = ['string', 'text', 'number', 'timestamp', 'boolean'] as const;
export type CustomFieldType = (typeof CUSTOM_FIELD_TYPES)[number];

/** Value of a custom field as it travels on the bus: text, a number, unix seconds, or a boolean. */
export type CustomValue = string | number | boolean;

/** The account's custom fields of one object, by field name. */
export type CustomFields = Readonly<Record<string, CustomFieldType>>;

export function isCustomFieldType(type: unknown): type is CustomFieldType {
  return typeof type === 'string' && (CUSTOM_FIELD_TYPES as readonly string[]).includes(type);
}

/** Spec "Data types": a string is at most 1024 characters unless stated otherwise. */
export const MAX_CUSTOM_STRING = 1024;

/** Spec "Data types" and "Limits": a custom number has at most 18 digits, at most 4 after the point. */
export const MAX_NUMBER_DIGITS = 18;
export const MAX_NUMBER_DECIMALS = 4;
const DECIMAL_TEXT = /^[+-]?(\d+)(?:\.(\d+))?$/;
const TIMESTAMP_REASON = 'must be an ISO 8601 date and time or unix epoch seconds, 1900 to 2299';

/** Spec "Data types": a boolean is one of 0, 1, true, false (as JSON values or as text, any case). */
export const BOOLEAN_REASON = 'must be one of 0, 1, true, false';

/** The boolean a value of the data types table stands for, or undefined when it is none. */
export function readBoolean(value: unknown): boolean | undefined {
  if (value === true || value === 1) return true;
  if (value === false || value === 0) return false;
  if (typeof value !== 'string') return undefined;
  const text = value.trim().toLowerCase();
  if (text === '1' || text === 'true') return true;
  if (text === '0' || text === 'false') return false;
  return undefined;
}

/**
 * Reads a value sent for a custom field: the value to keep, or why it is not one of the type.
 * null means "no value": every type allows null, and an empty text is null (spec "Data types": null is an
 * empty field in bulk files; "Entities (v2)": null or "" unsets), so every entry path unsets alike.
 */
export function readCustomValue(
  type: CustomFieldType,
  value: unknown,
): { value: CustomValue | null } | { reason: string } {
  if (value === null || value === '') return { value: null };
  switch (type) {
    case 'string':
    case 'text':
      if (typeof value !== 'string') return { reason: 'must be string' };
      if ([...value].length > MAX_CUSTOM_STRING)
        return { reason: `must NOT have more than ${MAX_CUSTOM_STRING} characters` };
      return { value };
    case 'number':
      return readNumber(value);
    case 'boolean': {
      const read = readBoolean(value);
      return read === undefined ? { reason: BOOLEAN_REASON } : { value: read };
    }
    case 'timestamp': {
      // The table's timestamp rule (ISO 8601 or epoch seconds) for every timestamp: the "unix timestamp"
      // of custom fields is how it is kept and read back (spec/NOTES.md "Timestamps").
      const ms = parseTimestamp(value);
      if (ms === undefined) return { reason: TIMESTAMP_REASON };
      // The store keeps milliseconds: the value travels as the one it will read back.
      return { value: ms / 1000 };
    }
  }
}

function readNumber(value: unknown): { value: number | string } | { reason: string } {
  // A number's shortest text form: exponent forms only appear below 1e-6 or from 1e21, both over the limits.
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : '';
  if (typeof value === 'number' && !Number.isFinite(value)) return { reason: 'must be a finite number' };
  const match = DECIMAL_TEXT.exec(text);
  if (!match) return { reason: 'must be a number in standard decimal format' };
  const decimals = (match[2] ?? '').replace(/0+$/, '');
  const integer = match[1]!.replace(/^0+(?=\d)/, '');
  const digits = (integer === '0' ? 0 : integer.length) + decimals.length;
  if (decimals.length > MAX_NUMBER_DECIMALS)
    return { reason: `must have at most ${MAX_NUMBER_DECIMALS} digits after the decimal point` };
  if (Math.max(digits, 1) > MAX_NUMBER_DIGITS)
    return { reason: `must have at most ${MAX_NUMBER_DIGITS} digits in total` };
  // 18 digits are more than a double holds: a value it would round travels as its exact decimal text.
  const exact = `${text.startsWith('-') ? '-' : ''}${integer}${decimals ? `.${decimals}` : ''}`;
  const number = Number(text);
  return { value: String(number) === exact || number === 0 ? number : exact };
}

/**
 * Picks the custom fields out of sent fields: each defined one read by its type (an unreadable one is
 * reported under `prefix + name`); undefined ones are left to the caller, which drops them.
 */
export function readCustomFields(
  sent: Readonly<Record<string, unknown>> | undefined,
  fields: CustomFields,
  prefix = '',
): { values: Record<string, CustomValue | null>; invalids: { field: string; reason: string }[] } {
  const values: Record<string, CustomValue | null> = {};
  const invalids: { field: string; reason: string }[] = [];
  // Most accounts define no custom field of an object: nothing to look at on the hot path.
  if (!hasAny(fields)) return { values, invalids };
  for (const [name, value] of Object.entries(sent ?? {})) {
    if (value === undefined || !Object.hasOwn(fields, name)) continue;
    const read = readCustomValue(fields[name]!, value);
    if ('reason' in read) invalids.push({ field: `${prefix}${name}`, reason: read.reason });
    else values[name] = read.value;
  }
  return { values, invalids };
}

function hasAny(fields: CustomFields): boolean {
  for (const _ in fields) return true;
  return false;
}
