import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The token of an email unsubscribe link (spec "Events": a link in a message unsubscribes from the
 * campaign's lists, or globally when none): who, from what, for which account, until when; signed with
 * HMAC-SHA256 under a key derived from the secret for this one purpose, so a token made for anything
 * else, or by anyone without the secret, or changed in any byte, is refused. Stateless: a replica
 * checks it without a lookup.
 */
export interface UnsubscribeClaims {
  account: string;
  email: string;
  /** The lists to leave; empty: a global opt-out (svc_all). */
  listIds: string[];
  /** Unix milliseconds after which the link no longer works. */
  expiresAt: number;
}

const PURPOSE = 'cdp unsubscribe link v1';

interface Payload {
  p: typeof PURPOSE;
  a: string;
  e: string;
  l: string[];
  x: number;
}

function keyOf(secret: string): Buffer {
  return createHmac('sha256', secret).update(PURPOSE).digest();
}

function sign(secret: string, payload: string): string {
  return createHmac('sha256', keyOf(secret)).update(payload).digest('base64url');
}

export function signUnsubscribeToken(secret: string, claims: UnsubscribeClaims): string {
  const payload: Payload = {
    p: PURPOSE,
    a: claims.account,
    e: claims.email,
    l: claims.listIds,
    x: claims.expiresAt,
  };
  const encoded = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${encoded}.${sign(secret, encoded)}`;
}

export type TokenCheck =
  { ok: true; claims: UnsubscribeClaims } | { ok: false; reason: 'invalid' | 'expired' };

/** Checks the signature first (nothing of an unsigned token is read), then the expiry against `now`. */
export function verifyUnsubscribeToken(secret: string, token: string, now: number): TokenCheck {
  const dot = token.indexOf('.');
  if (dot <= 0 || dot !== token.lastIndexOf('.')) return { ok: false, reason: 'invalid' };
  const encoded = token.slice(0, dot);
  // Compared as text: base64url's last character has spare bits, and a link differing in them is another link.
  const given = Buffer.from(token.slice(dot + 1));
  const expected = Buffer.from(sign(secret, encoded));
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: 'invalid' };
  let payload: Payload;
  try {
    payload = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')) as Payload;
  } catch {
    return { ok: false, reason: 'invalid' };
  }
  if (
    payload.p !== PURPOSE ||
    typeof payload.a !== 'string' ||
    typeof payload.e !== 'string' ||
    !Array.isArray(payload.l) ||
    !payload.l.every((l) => typeof l === 'string') ||
    typeof payload.x !== 'number'
  )
    return { ok: false, reason: 'invalid' };
  if (now >= payload.x) return { ok: false, reason: 'expired' };
  return {
    ok: true,
    claims: { account: payload.a, email: payload.e, listIds: payload.l, expiresAt: payload.x },
  };
}
