/**
 * Identifier rules (spec "Identifiers"): a customer is identified by customer_id, email, vuid, fs_user_id,
 * any `*_push_tokens` field or any `svc_alias_<name>` field.
 */
export const ALIAS_PREFIX = 'svc_alias_';
export const PUSH_TOKENS_SUFFIX = '_push_tokens';
/**
 * `fs_user_id`: the user id Optimizely's Feature Experimentation SDKs send with their events and audience
 * lookups (docs/api-notes.md "Optimizely SDKs"); like vuid, never shown on the profile.
 */
export const NAMED_IDENTIFIERS = ['customer_id', 'email', 'vuid', 'fs_user_id'] as const;

/** One identifying value of a customer, as the identity index keys it. */
export interface Identifier {
  kind: string;
  value: string;
}

/**
 * Custom identifiers an account creates (`POST /v3/schema/identifiers`): the name's last word says what
 * kind of value it is, as the original API's clients require, and so does the display name's.
 */
export const CUSTOM_IDENTIFIER_SUFFIXES = ['_id', '_hash', '_number', '_token', '_alias', '_address', '_key'];
export const CUSTOM_IDENTIFIER_DISPLAY_SUFFIXES = [
  ' ID',
  ' Hash',
  ' Number',
  ' Token',
  ' Alias',
  ' Address',
  ' Key',
];
export const MERGE_CONFIDENCES = ['low', 'high'] as const;
/**
 * `high`: customers sharing the identifier are one customer (merged, like email). `low`: the identifier
 * finds its customer for a record that names no other known customer, but never merges two known ones.
 */
export type MergeConfidence = (typeof MERGE_CONFIDENCES)[number];

/** A custom identifier of an account, as its schema keeps it. */
export interface CustomIdentifier {
  name: string;
  display_name: string;
  merge_confidence: MergeConfidence;
  /** Whether messages may be sent to its values (a channel address), as the original API records it. */
  messaging: boolean;
}

/** The names of an account's custom identifiers: identifier fields besides the built-in ones. */
export type CustomIdentifierNames = ReadonlySet<string>;
const NO_CUSTOM_IDENTIFIERS: CustomIdentifierNames = new Set();

/** Whether a field identifies a customer: a built-in identifier, or one of the account's custom ones. */
export function isIdentifierField(
  name: string,
  custom: CustomIdentifierNames = NO_CUSTOM_IDENTIFIERS,
): boolean {
  return (
    (NAMED_IDENTIFIERS as readonly string[]).includes(name) ||
    custom.has(name) ||
    (name.startsWith(ALIAS_PREFIX) && name.length > ALIAS_PREFIX.length) ||
    (name.endsWith(PUSH_TOKENS_SUFFIX) && name.length > PUSH_TOKENS_SUFFIX.length)
  );
}

/**
 * Identifier kinds (of a record's linked identifiers) exposed on the profile; vuid, aliases and push
 * tokens are not (spec "Identifiers"). A kind that is no built-in identifier is one of the account's
 * custom identifiers (nothing else gets through the API), and each of those has a customer field.
 */
export function isProfileIdentifier(name: string): boolean {
  return name === 'customer_id' || name === 'email' || !isIdentifierField(name);
}

/**
 * Values that SDKs and careless senders put in identifier fields when they know nothing. They must never
 * identify anyone, or every anonymous visitor would be stitched into one customer.
 */
const JUNK_VALUES = new Set([
  '',
  'null',
  'undefined',
  'nil',
  'none',
  'nan',
  '0',
  '-1',
  'anonymous',
  'unknown',
  'n/a',
]);

export function isJunkIdentifierValue(value: string): boolean {
  return JUNK_VALUES.has(value.trim().toLowerCase());
}

/** The form an identifier is matched in: emails compare case-insensitively, other ids exactly (trimmed). */
export function normalizeIdentifierValue(kind: string, value: string): string {
  const trimmed = value.trim();
  return kind === 'email' ? trimmed.toLowerCase() : trimmed;
}

/** Every usable identifier of a record, normalized, junk removed, duplicates dropped, in a stable order. */
export function extractIdentifiers(
  fields: Readonly<Record<string, unknown>>,
  custom: CustomIdentifierNames = NO_CUSTOM_IDENTIFIERS,
): Identifier[] {
  const out: Identifier[] = [];
  const seen = new Set<string>();
  const add = (kind: string, raw: unknown): void => {
    if (typeof raw !== 'string' || isJunkIdentifierValue(raw)) return;
    const value = normalizeIdentifierValue(kind, raw);
    const key = identityKey({ kind, value });
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ kind, value });
  };
  for (const name of Object.keys(fields).sort(compareIdentifierKinds)) {
    if (!isIdentifierField(name, custom)) continue;
    const raw = fields[name];
    if (Array.isArray(raw)) raw.forEach((token) => add(name, token));
    else add(name, raw);
  }
  return out;
}

/** customer_id first, then email, then everything else by name: the order resolution consults them in. */
export function compareIdentifierKinds(a: string, b: string): number {
  const rank = (k: string): number => {
    const i = (NAMED_IDENTIFIERS as readonly string[]).indexOf(k);
    return i === -1 ? NAMED_IDENTIFIERS.length : i;
  };
  return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
}

/** A single string key for maps and Redis: kind and value joined by a byte no identifier kind contains. */
export function identityKey(id: Identifier): string {
  return `${id.kind}\u0000${id.value}`;
}

/** The identifiers of a record keyed by field, as carried on the bus (push tokens may be several). */
export function collectIdentifiers(
  fields: Readonly<Record<string, unknown>>,
  custom: CustomIdentifierNames = NO_CUSTOM_IDENTIFIERS,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const id of extractIdentifiers(fields, custom)) {
    const existing = out[id.kind];
    if (existing === undefined) out[id.kind] = id.value;
    else out[id.kind] = Array.isArray(existing) ? [...existing, id.value] : [existing, id.value];
  }
  return out;
}

/**
 * The identifiers of a record as `collectIdentifiers` left them (normalized, junk removed, in
 * resolution order), as a list: no need to normalize them a second time.
 */
export function identifierList(collected: Readonly<Record<string, string | string[]>>): Identifier[] {
  const out: Identifier[] = [];
  for (const [kind, value] of Object.entries(collected)) {
    if (Array.isArray(value)) for (const v of value) out.push({ kind, value: v });
    else out.push({ kind, value });
  }
  return out;
}

export const IDENTIFIER_REQUIRED_REASON =
  'at least one identifier is required: customer_id, email, vuid, a *_push_tokens field, a svc_alias_* field or a custom identifier';

/** Why a custom identifier's name or display name breaks the suffix rule, or undefined. */
export function customIdentifierNameProblem(name: string): string | undefined {
  return CUSTOM_IDENTIFIER_SUFFIXES.some((s) => name.endsWith(s) && name.length > s.length)
    ? undefined
    : `must end with one of ${CUSTOM_IDENTIFIER_SUFFIXES.join(', ')}`;
}

export function customIdentifierDisplayNameProblem(displayName: string): string | undefined {
  const trimmed = displayName.trim();
  return CUSTOM_IDENTIFIER_DISPLAY_SUFFIXES.some((s) => trimmed.endsWith(s) && trimmed.length > s.length)
    ? undefined
    : `must end with one of ${CUSTOM_IDENTIFIER_DISPLAY_SUFFIXES.map((s) => `"${s}"`).join(', ')}`;
}
