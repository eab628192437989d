import type { CustomValue } from './custom-fields.js';
import type { EventRecord } from './events.js';
import {
  isIdentifierField,
  normalizeIdentifierValue,
  PUSH_TOKENS_SUFFIX,
  type CustomIdentifierNames,
} from './identifiers.js';

const NONE: CustomIdentifierNames = new Set();

/**
 * State kept per identifier value rather than per customer (the original API's `/v3/consent`,
 * `/v3/reachability` and `/v3/identifiers`): whether a messaging address may be messaged, whether it
 * can be reached, and a few fields of metadata about it.
 */

/** Why an identifier became unreachable (the original API's `reachable_update_type`). */
export const REACHABILITY_UPDATE_TYPES = [
  'hard_bounce',
  'soft_bounce',
  'spam_report',
  'uninstall',
  'invalid_identifier',
  'returned_to_sender',
  'unknown',
  'expired',
  'other',
] as const;
export type ReachabilityUpdateType = (typeof REACHABILITY_UPDATE_TYPES)[number];

/**
 * `phone` is no identifier of identity resolution (a profile field kept exactly as sent), but messages
 * are sent to it: it has consent, reachability and metadata like the identifiers, its value kept as sent
 * and matched exactly against profiles (as the compliance opt-out matches it).
 */
export const PHONE = 'phone';

/** Fields whose values can hold per-identifier state: every identifier field (custom ones too), and phone. */
export function isStateIdentifier(field: string, custom: CustomIdentifierNames = NONE): boolean {
  return isIdentifierField(field, custom) || field === PHONE;
}

export const STATE_IDENTIFIERS_TEXT =
  'customer_id, email, vuid, phone, a *_push_tokens field or a svc_alias_* field';

/**
 * Identifiers a message is sent to: email, phone and push tokens. Consent is asked of these only; the
 * others (customer_id, vuid, aliases) address no one. `messaging` names the account's custom identifiers
 * created with `messaging: true`: channel addresses as well.
 */
export function isMessagingIdentifier(field: string, messaging: CustomIdentifierNames = NONE): boolean {
  return (
    field === 'email' ||
    field === PHONE ||
    messaging.has(field) ||
    (isIdentifierField(field) && field.endsWith(PUSH_TOKENS_SUFFIX))
  );
}

export const MESSAGING_IDENTIFIERS_TEXT = 'email, phone or a *_push_tokens field';

/** A value as its state is keyed: identifiers as resolution normalizes them, a phone exactly as sent. */
export function normalizeStateValue(field: string, value: string): string {
  return field === PHONE ? value : normalizeIdentifierValue(field, value);
}

interface IdentifierUpdateBase {
  /** The identifier field (`email`, `ios_push_tokens`…) and its value, normalized as the index keys it. */
  field: string;
  value: string;
  /** Milliseconds since the epoch: the sender's `*_update_ts`, or the time of receipt. */
  ts: number;
}

/** A consent change; for `email` it is the channel opt-in (`opted_in`, `svc_all`). */
export interface ConsentUpdate extends IdentifierUpdateBase {
  type: 'consent';
  consent: boolean;
  reason: string | null;
  /** The `consent` event it makes (`opt-in` / `opt-out`), `event_data` read as event fields. */
  event: EventRecord;
}

export interface ReachabilityUpdate extends IdentifierUpdateBase {
  type: 'reachability';
  reachable: boolean;
  /** Required when `reachable` is false, null when it is true. */
  update_type: ReachabilityUpdateType | null;
  reason: string | null;
  /** The `reachability` event it makes (`reachable` / `unreachable`). */
  event: EventRecord;
}

/** Metadata fields to set (null clears one); the fields not named keep their values. */
export interface MetadataUpdate extends IdentifierUpdateBase {
  type: 'metadata';
  metadata: Record<string, CustomValue | null>;
}

export type IdentifierUpdate = ConsentUpdate | ReachabilityUpdate | MetadataUpdate;
