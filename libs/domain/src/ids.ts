import { createHash } from 'node:crypto';

/**
 * Ids derived from the message that caused them, so that a redelivered message produces the same
 * customers and events again: replays are idempotent without coordination.
 */
export function derivedId(prefix: string, ...parts: (string | number)[]): string {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest('base64url');
  return `${prefix}${digest.slice(0, 22)}`;
}

export function eventId(messageId: string, index: number): string {
  return `${messageId}-${index}`;
}

/** The seed of the id a record's new customer gets: a Redis Function derives the same id from it. */
export function customerIdSeed(messageId: string, index: number): string {
  return `${messageId}:${index}`;
}

/** `c_` and the first 24 hex digits of the seed's SHA-1 (what Redis's `redis.sha1hex` computes too). */
export function customerIdFromSeed(seed: string): string {
  return `c_${createHash('sha1').update(seed).digest('hex').slice(0, 24)}`;
}

export function newCustomerId(messageId: string, index: number): string {
  return customerIdFromSeed(customerIdSeed(messageId, index));
}
