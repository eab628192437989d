import { readCustomFields, readCustomValue } from './custom-fields.js';
import { normalizeEvent } from './events.js';
import { normalizeProfile } from './profiles.js';

const ok = (type: Parameters<typeof readCustomValue>[0], value: unknown) => readCustomValue(type, value);

describe('custom field values (spec "Data types")', () => {
  describe('number: at most 18 digits, at most 4 after the point', () => {
    it.each([
      ['0.0001', 0.0001],
      ['0', 0],
      ['3.1415', 3.1415],
      ['-2.3', -2.3],
      ['+7', 7],
    ])('accepts %s', (text, value) => {
      expect(ok('number', text)).toEqual({ value });
    });

    it.each(['123456789012345678', '12345678901234.5678', '-12345678901234.5678'])(
      'accepts %s (18 digits), kept exact as decimal text since a double would round it',
      (text) => {
        expect(ok('number', text)).toEqual({ value: text });
      },
    );

    it.each([
      ['1234567890123456789', 'digits in total'],
      ['123456789012345.6789', 'digits in total'],
      ['1.23456', 'after the decimal point'],
      ['0.00001', 'after the decimal point'],
    ])('refuses %s', (text, reason) => {
      expect(ok('number', text)).toEqual({ reason: expect.stringContaining(reason) });
    });

    it('reads JSON numbers by their decimal form', () => {
      expect(ok('number', 3.1415)).toEqual({ value: 3.1415 });
      expect(ok('number', -2.3)).toEqual({ value: -2.3 });
      expect(ok('number', 3.14159)).toEqual({ reason: expect.stringContaining('after the decimal point') });
      expect(ok('number', 1e-7)).toEqual({ reason: expect.any(String) });
      expect(ok('number', 1e21)).toEqual({ reason: expect.any(String) });
      expect(ok('number', 123456789012345680)).toEqual({ value: 123456789012345680 });
    });

    it('refuses what is not a decimal number', () => {
      for (const v of ['abc', '1e5', '1,5', '0x10', true, {}, [1], Number.NaN, Infinity])
        expect(ok('number', v)).toHaveProperty('reason');
    });

    it('does not count leading zeros or trailing zeros after the point', () => {
      expect(ok('number', '000123.4000')).toEqual({ value: 123.4 });
    });
  });

  describe('boolean: 0, 1, true, false', () => {
    it.each([
      [true, true],
      [1, true],
      ['1', true],
      ['true', true],
      [false, false],
      [0, false],
      ['0', false],
      ['false', false],
      ['TRUE', true],
      ['False', false],
    ])('reads %p as %p', (sent, value) => {
      expect(ok('boolean', sent)).toEqual({ value });
    });
    it.each(['yes', 2, 'no', 'truthy'])('refuses %p', (sent) => {
      expect(ok('boolean', sent)).toEqual({ reason: 'must be one of 0, 1, true, false' });
    });
  });

  describe('timestamp: ISO 8601 or unix seconds', () => {
    it('accepts seconds as a number or text', () => {
      expect(ok('timestamp', 1700000000)).toEqual({ value: 1700000000 });
      expect(ok('timestamp', '1700000000')).toEqual({ value: 1700000000 });
      expect(ok('timestamp', 1700000000.5)).toEqual({ value: 1700000000.5 });
    });
    it('accepts ISO 8601 as every timestamp of the data types table does, kept as unix seconds', () => {
      expect(ok('timestamp', '2024-01-01')).toEqual({ value: Date.UTC(2024, 0, 1) / 1000 });
      expect(ok('timestamp', '2023-11-14T22:13:20.5Z')).toEqual({ value: 1700000000.5 });
    });
    it('refuses what is no timestamp and times the store cannot hold', () => {
      expect(ok('timestamp', 'soon')).toHaveProperty('reason');
      expect(ok('timestamp', 99999999999)).toHaveProperty('reason'); // year 5138
    });
  });

  describe('string and text', () => {
    it('accept at most 1024 characters', () => {
      expect(ok('string', 'x'.repeat(1024))).toEqual({ value: 'x'.repeat(1024) });
      expect(ok('text', 'x'.repeat(1025))).toEqual({ reason: expect.stringContaining('1024') });
      expect(ok('text', 5)).toEqual({ reason: 'must be string' });
    });
  });

  it('reads an empty text as null for every type (null or "" unsets)', () => {
    for (const type of ['string', 'text', 'number', 'timestamp', 'boolean'] as const)
      expect(readCustomValue(type, '')).toEqual({ value: null });
  });

  it('every type allows null', () => {
    for (const type of ['string', 'text', 'number', 'timestamp', 'boolean'] as const)
      expect(ok(type, null)).toEqual({ value: null });
  });

  it('picks the defined fields out of sent ones and reports each unreadable one by its path', () => {
    const fields = { tier: 'number', vip: 'boolean' } as const;
    expect(readCustomFields({ tier: '2', vip: 'maybe', other: 1 }, fields, 'data.')).toEqual({
      values: { tier: 2 },
      invalids: [{ field: 'data.vip', reason: 'must be one of 0, 1, true, false' }],
    });
  });
});

describe('normalizers keep custom fields read beforehand and still drop the rest', () => {
  it('events', () => {
    const record = normalizeEvent(
      { type: 't', identifiers: { vuid: 'v' }, data: { tier: '2', nope: 1, page: '/' } },
      0,
      { tier: 2 },
    );
    expect(record).toMatchObject({ data: { tier: 2, page: '/' }, dropped: ['nope'] });
  });
  it('profiles: a value sets, null unsets', () => {
    const record = normalizeProfile(
      { email: 'a@b.co', tier: '2', gone: null, nope: 1 },
      { tier: 2, gone: null },
    );
    expect(record.attributes).toEqual({ email: 'a@b.co', tier: 2, gone: null });
    expect(record.dropped).toEqual(['nope']);
  });
});

describe('custom values the store reads back as sent', () => {
  it('keeps a timestamp to the millisecond, as DateTime64(3) stores it', () => {
    expect(readCustomValue('timestamp', '1700000000.12345')).toEqual({ value: 1700000000.123 });
    expect(readCustomValue('timestamp', 0.5)).toEqual({ value: 0.5 });
    expect(readCustomValue('timestamp', -2208988800)).toEqual({ value: -2208988800 });
    expect(readCustomValue('timestamp', -2208988801)).toEqual({ reason: expect.any(String) });
  });

  it('refuses an infinite number', () => {
    expect(readCustomValue('number', Infinity)).toEqual({ reason: 'must be a finite number' });
  });
});
