import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Tracker ids and secrets travel in headers and URLs: URL-safe characters only, no `.` (it splits a private key). */
const URL_SAFE = /^[A-Za-z0-9_-]{1,128}$/;

export function isUrlSafeToken(value: string): boolean {
  return URL_SAFE.test(value);
}

export function randomToken(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

/** A private key is `<tracker id>.<secret>` (spec/NOTES.md "Authentication and keys"). */
export function splitPrivateKey(key: string): { trackerId: string; secret: string } | undefined {
  const dot = key.indexOf('.');
  if (dot <= 0 || dot === key.length - 1) return undefined;
  return { trackerId: key.slice(0, dot), secret: key.slice(dot + 1) };
}

/** Only this hash of a secret is stored; the salt makes equal secrets of two accounts hash differently. */
export function hashSecret(secret: string, salt: string): string {
  return createHash('sha256').update(salt).update('\u0000').update(secret).digest('hex');
}

/** Compares without leaking, through timing, how much of the value matched. */
export function constantTimeEqual(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y) && a.length === b.length;
}
