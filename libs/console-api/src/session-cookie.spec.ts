import {
  csrfMatches,
  csrfToken,
  downloadSigned,
  readCookie,
  signDownload,
  signSession,
  verifySession,
} from './session-cookie.js';

const SECRET = 'x'.repeat(40);

describe('session cookie', () => {
  const now = 1_700_000_000_000;
  const cookie = signSession(SECRET, { sid: 's1', exp: now + 60_000 });

  it('verifies what it signed until it expires', () => {
    expect(verifySession(SECRET, cookie, now)).toEqual({ sid: 's1', exp: now + 60_000 });
    expect(verifySession(SECRET, cookie, now + 60_000)).toBeUndefined();
  });

  it('refuses another secret, a changed payload, a cut signature and junk', () => {
    expect(verifySession('y'.repeat(40), cookie, now)).toBeUndefined();
    const [payload, mac] = cookie.split('.') as [string, string];
    const other = Buffer.from(JSON.stringify({ sid: 's2', exp: now + 60_000 })).toString('base64url');
    expect(verifySession(SECRET, `${other}.${mac}`, now)).toBeUndefined();
    expect(verifySession(SECRET, `${payload}.${mac.slice(1)}`, now)).toBeUndefined();
    for (const junk of [undefined, '', '.', 'abc', `${payload}.`, 'a'.repeat(600)]) {
      expect(verifySession(SECRET, junk, now)).toBeUndefined();
    }
  });

  it('binds the CSRF token to the session', () => {
    expect(csrfMatches(SECRET, 's1', csrfToken(SECRET, 's1'))).toBe(true);
    expect(csrfMatches(SECRET, 's2', csrfToken(SECRET, 's1'))).toBe(false);
    expect(csrfMatches(SECRET, 's1', undefined)).toBe(false);
  });

  it('reads one cookie from a header', () => {
    expect(readCookie('a=1; cdp_console=v.w; b=2', 'cdp_console')).toBe('v.w');
    expect(readCookie('xcdp_console=1', 'cdp_console')).toBeUndefined();
  });

  it('signs an export download link for its key until it expires, and nothing else', () => {
    const key = 'trk/data-exports/x/events_00000.csv';
    const exp = now + 300_000;
    const sig = signDownload(SECRET, key, exp);
    expect(downloadSigned(SECRET, key, exp, sig, now)).toBe(true);
    expect(downloadSigned(SECRET, key, exp, sig, exp + 1)).toBe(false);
    expect(downloadSigned(SECRET, 'trk/data-exports/x/other.csv', exp, sig, now)).toBe(false);
    expect(downloadSigned(SECRET, key, exp + 1, sig, now)).toBe(false);
    expect(downloadSigned('y'.repeat(40), key, exp, sig, now)).toBe(false);
    expect(downloadSigned(SECRET, key, exp, sig.slice(1), now)).toBe(false);
    expect(downloadSigned(SECRET, key, Number.NaN, sig, now)).toBe(false);
    // A session cookie's signature is no download signature (the purposes differ).
    expect(signDownload(SECRET, key, exp)).not.toBe(signSession(SECRET, { sid: key, exp }).split('.')[1]);
  });
});
