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

export function newCustomerId(messageId: string, index: number): string {
  return derivedId('c_', messageId, index);
}
