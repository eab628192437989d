import { CUSTOMER_FIELDS, applyAttributeUpdate, applyProfileUpdate, normalizeProfile } from './profiles.js';

describe('CUSTOMER_FIELDS', () => {
  it('lists the customer table of the spec plus opted_in', () => {
    expect(Object.keys(CUSTOMER_FIELDS).sort()).toEqual(
      [
        'customer_id',
        'email',
        'name',
        'first_name',
        'last_name',
        'phone',
        'street1',
        'street2',
        'city',
        'state',
        'zip',
        'country',
        'timezone',
        'gender',
        'image_url',
        'opted_in',
      ].sort(),
    );
    expect(CUSTOMER_FIELDS.opted_in).toBe('boolean');
    expect(CUSTOMER_FIELDS.phone).toBe('string');
  });
});

describe('normalizeProfile', () => {
  it('splits identifiers from customer fields', () => {
    const record = normalizeProfile({
      email: 'John@Example.com',
      customer_id: 'c1',
      vuid: 'v1',
      svc_alias_cart: 'cart-1',
      ios_push_tokens: ['t1'],
      city: 'Oslo',
      opted_in: true,
    });
    expect(record.identifiers).toEqual({
      customer_id: 'c1',
      email: 'john@example.com',
      vuid: 'v1',
      svc_alias_cart: 'cart-1',
      ios_push_tokens: 't1',
    });
    // customer_id and email are customer fields too; vuid, aliases and push tokens are not exposed.
    expect(record.attributes).toEqual({
      email: 'John@Example.com',
      customer_id: 'c1',
      city: 'Oslo',
      opted_in: true,
    });
    expect(record).not.toHaveProperty('dropped');
  });

  it('drops and names fields that are neither customer fields nor identifiers', () => {
    const record = normalizeProfile({ email: 'a@b.co', loyalty_tier: 'gold', Name: 'x' });
    expect(record.attributes).toEqual({ email: 'a@b.co' });
    expect(record.dropped).toEqual(['loyalty_tier', 'Name']);
  });

  // Regression: the field table is a plain object, so names inherited from Object.prototype
  // ('constructor', 'toString', ...) pass as customer fields and would be stored on the profile.
  it('drops fields named like Object.prototype members', () => {
    const record = normalizeProfile({ email: 'a@b.co', constructor: 'x', toString: 'y' });
    expect(record.attributes).toEqual({ email: 'a@b.co' });
    expect(record.dropped).toEqual(['constructor', 'toString']);
  });

  it('turns an empty string into an unset (null), and keeps null as unset', () => {
    const record = normalizeProfile({ email: 'a@b.co', phone: '', city: null });
    expect(record.attributes).toEqual({ email: 'a@b.co', phone: null, city: null });
  });

  it('ignores undefined values', () => {
    const record = normalizeProfile({ email: 'a@b.co', city: undefined, unknown_field: undefined });
    expect(record.attributes).toEqual({ email: 'a@b.co' });
    expect(record).not.toHaveProperty('dropped');
  });

  it('leaves name to the fold (applyProfileUpdate): first and last name pass as sent, an empty one unsets', () => {
    expect(normalizeProfile({ first_name: 'Ada', last_name: '' }).attributes).toEqual({
      first_name: 'Ada',
      last_name: null,
    });
    expect(normalizeProfile({ name: '' }).attributes).toEqual({ name: null });
  });

  it('returns no identifiers when there are none (the caller reports that)', () => {
    expect(normalizeProfile({ name: 'x', email: 'null' }).identifiers).toEqual({});
  });
});

describe('applyAttributeUpdate', () => {
  it('sets supplied fields, removes nulls and keeps the rest', () => {
    const current = { name: 'Ada', city: 'London', opted_in: true };
    expect(applyAttributeUpdate(current, { city: 'Oslo', opted_in: null, phone: '555' })).toEqual({
      name: 'Ada',
      city: 'Oslo',
      phone: '555',
    });
  });

  it('keeps false values', () => {
    expect(applyAttributeUpdate({ opted_in: true }, { opted_in: false })).toEqual({ opted_in: false });
  });

  it('does not change the current attributes', () => {
    const current = { name: 'Ada' };
    applyAttributeUpdate(current, { name: null, city: 'x' });
    expect(current).toEqual({ name: 'Ada' });
  });

  it('removing an absent field changes nothing', () => {
    expect(applyAttributeUpdate({ name: 'Ada' }, { city: null })).toEqual({ name: 'Ada' });
    expect(applyAttributeUpdate({ name: 'Ada' }, {})).toEqual({ name: 'Ada' });
  });
});

describe('applyProfileUpdate', () => {
  it('derives name from first and last name when it is absent, from the whole profile', () => {
    expect(applyProfileUpdate({}, { first_name: 'Ada', last_name: 'Lovelace' }).name).toBe('Ada Lovelace');
    expect(applyProfileUpdate({ first_name: 'Ada', name: 'Ada' }, { last_name: 'Lovelace' }).name).toBe(
      'Ada Lovelace',
    );
    expect(applyProfileUpdate({ last_name: 'Lovelace', name: 'Lovelace' }, { first_name: 'Ada' }).name).toBe(
      'Ada Lovelace',
    );
  });

  it('keeps a given name when first or last name change, and never parses them from it', () => {
    const given = { first_name: 'Ada', name: 'Countess Ada' };
    expect(applyProfileUpdate(given, { first_name: 'Augusta' })).toEqual({
      first_name: 'Augusta',
      name: 'Countess Ada',
    });
    expect(applyProfileUpdate({}, { name: 'Ada Lovelace' })).toEqual({ name: 'Ada Lovelace' });
  });

  it('a name unset follows first and last name again; none left unsets it', () => {
    expect(applyProfileUpdate({ first_name: 'Ada', name: 'Countess Ada' }, { name: null }).name).toBe('Ada');
    expect(applyProfileUpdate({ first_name: 'Ada', name: 'Ada' }, { first_name: null })).toEqual({});
  });
});
