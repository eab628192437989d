import { constantTimeEqual, hashSecret, isUrlSafeToken, randomToken, splitPrivateKey } from './keys.js';

describe('isUrlSafeToken', () => {
  it.each(['a', 'Z', '0', '_', '-', 'my-Tracker_01', 'x'.repeat(128)])('accepts %j', (value) => {
    expect(isUrlSafeToken(value)).toBe(true);
  });

  it.each(['', 'x'.repeat(129), 'a.b', 'a b', 'a/b', 'a+b', 'a=', 'a%20', 'ü', 'a\nb', ' a'])(
    'refuses %j',
    (value) => {
      expect(isUrlSafeToken(value)).toBe(false);
    },
  );
});

describe('randomToken', () => {
  it('is base64url of the given number of random bytes', () => {
    const token = randomToken(32);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
    expect(randomToken(12)).toHaveLength(16);
  });

  it('is URL-safe and differs every time', () => {
    const tokens = new Set(Array.from({ length: 50 }, () => randomToken(16)));
    expect(tokens.size).toBe(50);
    for (const t of tokens) expect(isUrlSafeToken(t)).toBe(true);
  });
});

describe('splitPrivateKey', () => {
  it('splits `<tracker id>.<secret>` at the first dot', () => {
    expect(splitPrivateKey('tracker.secret')).toEqual({ trackerId: 'tracker', secret: 'secret' });
    expect(splitPrivateKey('t.s.x')).toEqual({ trackerId: 't', secret: 's.x' });
  });

  it.each(['tracker', '', '.', '.secret', 'tracker.'])('is undefined for %j', (key) => {
    expect(splitPrivateKey(key)).toBeUndefined();
  });
});

describe('hashSecret', () => {
  it('is a deterministic hex SHA-256 that does not contain the secret', () => {
    const hash = hashSecret('my-secret', 'salt');
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hashSecret('my-secret', 'salt')).toBe(hash);
    expect(hash).not.toContain('my-secret');
  });

  it('changes with the salt and with the secret', () => {
    const hash = hashSecret('secret', 'salt');
    expect(hashSecret('secret', 'salt2')).not.toBe(hash);
    expect(hashSecret('secret2', 'salt')).not.toBe(hash);
  });

  it('keeps salt and secret apart', () => {
    expect(hashSecret('c', 'ab')).not.toBe(hashSecret('bc', 'a'));
  });
});

describe('constantTimeEqual', () => {
  it('is true for equal strings only', () => {
    expect(constantTimeEqual('abc', 'abc')).toBe(true);
    expect(constantTimeEqual('', '')).toBe(true);
    expect(constantTimeEqual('abc', 'abd')).toBe(false);
    expect(constantTimeEqual('abc', 'abcd')).toBe(false);
    expect(constantTimeEqual('abc', '')).toBe(false);
    expect(constantTimeEqual('ABC', 'abc')).toBe(false);
  });
});
