import { createHmac, timingSafeEqual } from 'node:crypto';

/** The console's session cookie: only a session id and its expiry, signed by the server; never a key. */
export const SESSION_COOKIE = 'cdp_console';

export interface SessionClaims {
  /** The session's id in the metadata store (signing out ends it there, for every replica). */
  sid: string;
  /** Expiry, ms since the epoch. */
  exp: number;
}

function mac(secret: string, purpose: string, value: string): string {
  return createHmac('sha256', secret).update(purpose).update('\u0000').update(value).digest('base64url');
}

export function signSession(secret: string, claims: SessionClaims): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${payload}.${mac(secret, 'session', payload)}`;
}

/** The claims of a cookie this server signed and that has not expired; undefined for anything else. */
export function verifySession(
  secret: string,
  value: string | undefined,
  now = Date.now(),
): SessionClaims | undefined {
  if (!value || value.length > 512) return undefined;
  const dot = value.indexOf('.');
  if (dot <= 0) return undefined;
  const payload = value.slice(0, dot);
  const given = Buffer.from(value.slice(dot + 1));
  const expected = Buffer.from(mac(secret, 'session', payload));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  const { sid, exp } = (claims ?? {}) as Partial<SessionClaims>;
  if (typeof sid !== 'string' || typeof exp !== 'number' || exp <= now) return undefined;
  return { sid, exp };
}

/** The token a page sends back in `x-csrf-token` on every state-changing call: bound to its session. */
export function csrfToken(secret: string, sid: string): string {
  return mac(secret, 'csrf', sid);
}

export function csrfMatches(secret: string, sid: string, sent: string | undefined): boolean {
  if (!sent) return false;
  const a = Buffer.from(sent);
  const b = Buffer.from(csrfToken(secret, sid));
  return a.length === b.length && timingSafeEqual(a, b);
}

/** One cookie's value from a Cookie header. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** HttpOnly, SameSite=Strict, Secure when the page came over HTTPS, expiring with the session. */
export function sessionCookieHeader(value: string, maxAgeSeconds: number, secure: boolean): string {
  return [
    `${SESSION_COOKIE}=${value}`,
    'Path=/console',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${maxAgeSeconds}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

export function clearedCookieHeader(secure: boolean): string {
  return sessionCookieHeader('', 0, secure);
}

/** The signature of a short-lived export download link: the object's key and the link's expiry (ms). */
export function signDownload(secret: string, key: string, exp: number): string {
  return mac(secret, 'export-download', `${key}\u0000${exp}`);
}

export function downloadSigned(
  secret: string,
  key: string,
  exp: number,
  signature: string,
  now = Date.now(),
): boolean {
  if (!Number.isSafeInteger(exp) || exp < now) return false;
  const given = Buffer.from(signature);
  const expected = Buffer.from(signDownload(secret, key, exp));
  return given.length === expected.length && timingSafeEqual(given, expected);
}
