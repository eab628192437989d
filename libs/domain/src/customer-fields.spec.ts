import { customerFieldProblem, customerFieldProblems } from './customer-fields.js';
import { normalizeProfile } from './profiles.js';

describe('customer field rules (spec "Customer fields", "Data types")', () => {
  it.each([
    ['email', 'a@b.co', true],
    ['email', 'first.last+tag@mail.example.org', true],
    ['email', 'a@b', false],
    ['email', 'ab.com', false],
    ['email', 'a @b.com', false],
    ['email', 'anonymous', true], // junk: ignored, not refused
    ['gender', 'M', true],
    ['gender', 'F', true],
    ['gender', 'm', false],
    ['gender', 'X', false],
    ['country', 'FRA', true],
    ['country', 'usa', true],
    ['country', 'FR', false],
    ['country', 'XYZ', false],
    ['timezone', 'Europe/Paris', true],
    ['timezone', 'America/Argentina/Buenos_Aires', true],
    ['timezone', 'UTC', true],
    ['timezone', 'Mars/Olympus', false],
    ['timezone', '+02:00', false],
    ['image_url', 'https://cdn.example.com/p.png', true],
    ['image_url', 'http://example.com', true],
    ['image_url', 'ftp://example.com/p.png', false],
    ['image_url', 'not a url', false],
    ['phone', '+1 (555) 010-0000 ext. 7', true],
    ['city', 'anything at all', true],
  ])('%s %j accepted: %s', (field, value, ok) => {
    expect(customerFieldProblem(field, value) === undefined).toBe(ok);
  });

  it('null and the empty string unset a field and are never refused', () => {
    expect(customerFieldProblems({ gender: null, country: '', image_url: '' })).toEqual([]);
  });

  it('reports every refused field with a reason', () => {
    expect(customerFieldProblems({ gender: 'x', country: 'FR', email: 'ok@x.com' })).toEqual([
      { field: 'gender', reason: 'must be M or F' },
      { field: 'country', reason: 'must be an ISO 3166-1 alpha-3 country code' },
    ]);
  });

  it('stores country codes in upper case and phone numbers exactly as sent', () => {
    const { attributes } = normalizeProfile({ email: 'a@x.com', country: 'nor', phone: ' 00 47-123 ' });
    expect(attributes).toMatchObject({ country: 'NOR', phone: ' 00 47-123 ' });
  });

  it('never stores a junk identifier value as an attribute', () => {
    const record = normalizeProfile({ email: 'null', customer_id: 'undefined', vuid: 'v1' });
    expect(record.attributes).toEqual({});
    expect(record.identifiers).toEqual({ vuid: 'v1' });
  });
});
