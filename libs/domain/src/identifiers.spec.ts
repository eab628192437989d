import {
  ALIAS_PREFIX,
  IDENTIFIER_REQUIRED_REASON,
  PUSH_TOKENS_SUFFIX,
  collectIdentifiers,
  compareIdentifierKinds,
  customIdentifierDisplayNameProblem,
  customIdentifierNameProblem,
  extractIdentifiers,
  identifierList,
  identityKey,
  isIdentifierField,
  isJunkIdentifierValue,
  isProfileIdentifier,
  normalizeIdentifierValue,
} from './identifiers.js';

describe('isIdentifierField', () => {
  it.each([
    'customer_id',
    'email',
    'vuid',
    'svc_alias_cart_id',
    'svc_alias_x',
    'ios_push_tokens',
    'a_push_tokens',
  ])('accepts %s', (name) => {
    expect(isIdentifierField(name)).toBe(true);
  });

  it.each([
    'name',
    'phone',
    'first_name',
    'Email',
    'customer',
    'svc_alias_', // prefix alone names no alias
    'svc_alias',
    '_push_tokens', // suffix alone names no token field
    'push_tokens',
    'push_tokens_ios',
    'alias_svc_cart',
    '',
  ])('refuses %j', (name) => {
    expect(isIdentifierField(name)).toBe(false);
  });

  it('uses the spec prefix and suffix', () => {
    expect(ALIAS_PREFIX).toBe('svc_alias_');
    expect(PUSH_TOKENS_SUFFIX).toBe('_push_tokens');
  });
});

describe('isProfileIdentifier', () => {
  it('exposes customer_id, email and custom identifiers on the profile, not vuid, aliases or push tokens', () => {
    expect(isProfileIdentifier('loyalty_id')).toBe(true);
    expect(isProfileIdentifier('customer_id')).toBe(true);
    expect(isProfileIdentifier('email')).toBe(true);
    expect(isProfileIdentifier('vuid')).toBe(false);
    expect(isProfileIdentifier('svc_alias_cart')).toBe(false);
    expect(isProfileIdentifier('ios_push_tokens')).toBe(false);
  });
});

describe('custom identifiers', () => {
  const custom = new Set(['loyalty_id', 'device_hash']);

  it('are identifier fields of the account that created them only', () => {
    expect(isIdentifierField('loyalty_id', custom)).toBe(true);
    expect(isIdentifierField('loyalty_id')).toBe(false);
    expect(isIdentifierField('member_id', custom)).toBe(false);
  });

  it('are extracted beside the built-in ones, trimmed, junk dropped, in resolution order', () => {
    expect(
      collectIdentifiers(
        { device_hash: ' D1 ', email: 'A@X.com', loyalty_id: 'unknown', member_id: 'm', vuid: 'v' },
        custom,
      ),
    ).toEqual({ email: 'a@x.com', device_hash: 'D1', vuid: 'v' });
  });

  it('name and display name end with the kind of value they hold', () => {
    expect(customIdentifierNameProblem('loyalty_id')).toBeUndefined();
    expect(customIdentifierNameProblem('wallet_address')).toBeUndefined();
    expect(customIdentifierNameProblem('_id')).toMatch(/^must end with one of _id, _hash/);
    expect(customIdentifierNameProblem('loyalty')).toMatch(/^must end with one of/);
    expect(customIdentifierDisplayNameProblem(' Loyalty ID ')).toBeUndefined();
    expect(customIdentifierDisplayNameProblem('Loyalty id')).toMatch(/^must end with one of " ID"/);
  });
});

describe('isJunkIdentifierValue', () => {
  it.each([
    '',
    '   ',
    'null',
    'NULL',
    ' Undefined ',
    'nil',
    'None',
    'NaN',
    '0',
    '-1',
    'anonymous',
    'UNKNOWN',
    'n/a',
  ])('treats %j as junk', (value) => {
    expect(isJunkIdentifierValue(value)).toBe(true);
  });

  it.each(['a@b.co', 'c-123', '00', '1', 'nullable', 'anonymous1', 'n/a/b', 'x'])('keeps %j', (value) => {
    expect(isJunkIdentifierValue(value)).toBe(false);
  });
});

describe('normalizeIdentifierValue', () => {
  it('trims and lower-cases emails', () => {
    expect(normalizeIdentifierValue('email', '  John.Doe@Example.COM ')).toBe('john.doe@example.com');
  });

  it('trims other identifiers but keeps their case', () => {
    expect(normalizeIdentifierValue('customer_id', ' AbC-1 ')).toBe('AbC-1');
    expect(normalizeIdentifierValue('vuid', 'VUID-x')).toBe('VUID-x');
    expect(normalizeIdentifierValue('svc_alias_cart', ' Cart9')).toBe('Cart9');
  });
});

describe('compareIdentifierKinds', () => {
  it('orders customer_id, email, vuid, then the rest by name', () => {
    const kinds = ['svc_alias_b', 'vuid', 'ios_push_tokens', 'email', 'svc_alias_a', 'customer_id'];
    expect([...kinds].sort(compareIdentifierKinds)).toEqual([
      'customer_id',
      'email',
      'vuid',
      'ios_push_tokens',
      'svc_alias_a',
      'svc_alias_b',
    ]);
  });

  it('is zero only for equal kinds', () => {
    expect(compareIdentifierKinds('email', 'email')).toBe(0);
    expect(compareIdentifierKinds('svc_alias_a', 'svc_alias_a')).toBe(0);
    expect(compareIdentifierKinds('svc_alias_a', 'svc_alias_b')).toBeLessThan(0);
    expect(compareIdentifierKinds('email', 'customer_id')).toBeGreaterThan(0);
  });
});

describe('identityKey', () => {
  it('keeps kind and value apart', () => {
    expect(identityKey({ kind: 'email', value: 'x' })).not.toBe(identityKey({ kind: 'emai', value: 'lx' }));
    expect(identityKey({ kind: 'email', value: 'a@b.co' })).toBe(
      identityKey({ kind: 'email', value: 'a@b.co' }),
    );
    expect(identityKey({ kind: 'email', value: 'a' })).not.toBe(identityKey({ kind: 'vuid', value: 'a' }));
  });
});

describe('extractIdentifiers', () => {
  it('returns every identifier, normalized, in resolution order, ignoring other fields', () => {
    expect(
      extractIdentifiers({
        name: 'John',
        svc_alias_cart: 'cart-1',
        vuid: 'v-1',
        email: ' John@Example.com ',
        customer_id: 'C-1',
        phone: '555',
      }),
    ).toEqual([
      { kind: 'customer_id', value: 'C-1' },
      { kind: 'email', value: 'john@example.com' },
      { kind: 'vuid', value: 'v-1' },
      { kind: 'svc_alias_cart', value: 'cart-1' },
    ]);
  });

  it('drops junk values and values that are not strings', () => {
    expect(
      extractIdentifiers({
        customer_id: 'null',
        email: '',
        vuid: 42,
        svc_alias_cart: null,
        svc_alias_x: ' unknown ',
      }),
    ).toEqual([]);
  });

  it('reads every token of a push-token array, without junk or duplicates', () => {
    expect(extractIdentifiers({ ios_push_tokens: ['t1', ' t2 ', 'null', 't1', 7] })).toEqual([
      { kind: 'ios_push_tokens', value: 't1' },
      { kind: 'ios_push_tokens', value: 't2' },
    ]);
  });

  it('returns an empty list when nothing identifies the record', () => {
    expect(extractIdentifiers({})).toEqual([]);
    expect(extractIdentifiers({ name: 'x', first_name: 'y' })).toEqual([]);
  });
});

describe('collectIdentifiers', () => {
  it('keys identifiers by field, with several push tokens as an array', () => {
    expect(
      collectIdentifiers({
        email: 'A@B.co',
        vuid: 'v1',
        android_push_tokens: ['p1', 'p2'],
        ios_push_tokens: ['q1'],
        first_name: 'x',
      }),
    ).toEqual({ email: 'a@b.co', vuid: 'v1', android_push_tokens: ['p1', 'p2'], ios_push_tokens: 'q1' });
  });

  it('leaves out fields whose values are all junk', () => {
    expect(collectIdentifiers({ customer_id: 'undefined', ios_push_tokens: ['null', ''] })).toEqual({});
  });
});

describe('IDENTIFIER_REQUIRED_REASON', () => {
  it('names every kind of identifier', () => {
    for (const word of ['customer_id', 'email', 'vuid', '_push_tokens', 'svc_alias_']) {
      expect(IDENTIFIER_REQUIRED_REASON).toContain(word);
    }
  });
});

describe('identifierList', () => {
  it('lists what collectIdentifiers kept, in the same order, without normalizing again', () => {
    const collected = collectIdentifiers({
      vuid: 'v1',
      email: ' A@X.com ',
      ios_push_tokens: ['t1', 't2'],
      customer_id: 'c9',
    });
    expect(identifierList(collected)).toEqual(
      extractIdentifiers({
        vuid: 'v1',
        email: ' A@X.com ',
        ios_push_tokens: ['t1', 't2'],
        customer_id: 'c9',
      }),
    );
  });
});
