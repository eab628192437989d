import { parseTimestamp, toStoreTime } from './timestamps.js';

const JAN_1_2024 = Date.UTC(2024, 0, 1);

describe('parseTimestamp', () => {
  describe('unix epoch seconds', () => {
    it('reads numbers as seconds and returns milliseconds', () => {
      expect(parseTimestamp(1_700_000_000)).toBe(1_700_000_000_000);
      expect(parseTimestamp(0)).toBe(0);
      expect(parseTimestamp(-86_400)).toBe(-86_400_000);
    });

    it('keeps fractions of a second to the millisecond', () => {
      expect(parseTimestamp(1_700_000_000.25)).toBe(1_700_000_000_250);
      expect(parseTimestamp(1.0006)).toBe(1001);
    });

    it('reads numeric strings as seconds, trimmed', () => {
      expect(parseTimestamp('1700000000')).toBe(1_700_000_000_000);
      expect(parseTimestamp(' 1700000000.5 ')).toBe(1_700_000_000_500);
      expect(parseTimestamp('-1')).toBe(-1000);
    });

    it('refuses numbers that are not finite', () => {
      expect(parseTimestamp(Number.NaN)).toBeUndefined();
      expect(parseTimestamp(Number.POSITIVE_INFINITY)).toBeUndefined();
      expect(parseTimestamp(Number.NEGATIVE_INFINITY)).toBeUndefined();
    });
  });

  describe('ISO 8601', () => {
    it('reads a date without a time as midnight UTC', () => {
      expect(parseTimestamp('2024-01-01')).toBe(JAN_1_2024);
      expect(parseTimestamp('2024-02-29')).toBe(Date.UTC(2024, 1, 29));
    });

    it('reads a time with a Z zone', () => {
      expect(parseTimestamp('2024-01-01T10:20:30Z')).toBe(Date.UTC(2024, 0, 1, 10, 20, 30));
      expect(parseTimestamp('2024-01-01T10:20:30.123Z')).toBe(Date.UTC(2024, 0, 1, 10, 20, 30, 123));
    });

    it('reads a time without a zone as UTC', () => {
      expect(parseTimestamp('2024-01-01T10:20:30')).toBe(Date.UTC(2024, 0, 1, 10, 20, 30));
      expect(parseTimestamp('2024-01-01T10:20')).toBe(Date.UTC(2024, 0, 1, 10, 20));
    });

    it('applies a zone offset, with or without a colon', () => {
      const eightUtc = Date.UTC(2024, 0, 1, 8);
      expect(parseTimestamp('2024-01-01T10:00:00+02:00')).toBe(eightUtc);
      expect(parseTimestamp('2024-01-01T10:00:00+0200')).toBe(eightUtc);
      expect(parseTimestamp('2024-01-01T03:00:00-05:00')).toBe(eightUtc);
    });

    it('accepts a space instead of T, lower-case t and z, and surrounding blanks', () => {
      expect(parseTimestamp('2024-01-01 10:00:00')).toBe(Date.UTC(2024, 0, 1, 10));
      expect(parseTimestamp('2024-01-01t10:00:00z')).toBe(Date.UTC(2024, 0, 1, 10));
      expect(parseTimestamp('  2024-01-01T10:00:00Z  ')).toBe(Date.UTC(2024, 0, 1, 10));
    });

    it('keeps milliseconds of longer fractions', () => {
      expect(parseTimestamp('2024-01-01T10:00:00.123456789Z')).toBe(Date.UTC(2024, 0, 1, 10, 0, 0, 123));
    });
  });

  describe('values that are not timestamps', () => {
    it.each([
      '',
      '   ',
      'yesterday',
      '2024-1-1',
      '01/02/2024',
      '2024-13-01',
      '2024-01-01T25:00:00Z',
      '2024-01-01T10:00:00 Z',
      '2024-01-01T10:00:00+2',
      '1e9',
      '0x10',
      'Mon, 01 Jan 2024 10:00:00 GMT',
    ])('refuses %j', (value) => {
      expect(parseTimestamp(value)).toBeUndefined();
    });

    it.each([null, undefined, true, {}, [], [1_700_000_000]])('refuses %p', (value) => {
      expect(parseTimestamp(value)).toBeUndefined();
    });

    // Regression: Date.parse rolls impossible days over into the next month
    // (2024-02-30 becomes 2024-03-01) instead of failing, so such dates are accepted.
    it.each(['2024-02-30', '2023-02-29', '2024-04-31T10:00:00Z', '2024-02-31 00:00:00'])(
      'refuses the impossible calendar date %j',
      (value) => {
        expect(parseTimestamp(value)).toBeUndefined();
      },
    );

    // Regression: epoch values are not range-checked; a millisecond count sent as
    // seconds gives a time no Date can hold, and toStoreTime then throws a RangeError.
    it('refuses epoch values beyond the range of a date', () => {
      expect(parseTimestamp(1e13)).toBeUndefined();
      expect(parseTimestamp('99999999999999999999')).toBeUndefined();
    });
  });
});

describe('toStoreTime', () => {
  it('writes epoch seconds with milliseconds where ClickHouse reads them, a UTC date-time elsewhere', () => {
    expect(toStoreTime(Date.UTC(2024, 0, 2, 3, 4, 5, 6))).toBe('1704164645.006');
    expect(toStoreTime(Date.UTC(1950, 0, 2, 3, 4, 5, 6))).toBe('1950-01-02 03:04:05.006');
    // Fewer than 9 digits of seconds are read as a date or refused by ClickHouse; 11 are refused.
    expect(toStoreTime(0)).toBe('1970-01-01 00:00:00.000');
    expect(toStoreTime(500)).toBe('1970-01-01 00:00:00.500');
    expect(toStoreTime(12_000)).toBe('1970-01-01 00:00:12.000');
    expect(toStoreTime(-1)).toBe('1969-12-31 23:59:59.999');
    expect(toStoreTime(99_999_999_999)).toBe('1973-03-03 09:46:39.999');
    expect(toStoreTime(100_000_000_000)).toBe('100000000.000');
    expect(toStoreTime(9_999_999_999_999)).toBe('9999999999.999');
    expect(toStoreTime(Date.UTC(2299, 11, 31, 23, 59, 59, 999))).toBe('2299-12-31 23:59:59.999');
    expect(toStoreTime(Date.UTC(1900, 0, 1))).toBe('1900-01-01 00:00:00.000');
  });

  it('rounds to the millisecond (a custom timestamp in seconds may carry more digits)', () => {
    expect(toStoreTime(1_700_000_000_123.6)).toBe('1700000000.124');
    expect(toStoreTime(-0.4)).toBe('1970-01-01 00:00:00.000');
  });

  it('round-trips with parseTimestamp', () => {
    const ms = Date.UTC(2031, 11, 31, 23, 59, 59, 999);
    expect(parseTimestamp(toStoreTime(ms))).toBe(ms);
  });
});
