/**
 * Timestamps (spec "Data types"): ISO 8601 or unix epoch seconds; a date without a time means
 * midnight UTC; a time without a zone is read as UTC.
 */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;
const EPOCH_SECONDS = /^-?\d+(\.\d+)?$/;

/** The range the store's DateTime64 holds: 1900-01-01 to 2299-12-31 UTC. */
const MIN_MS = Date.UTC(1900, 0, 1);
const MAX_MS = Date.UTC(2299, 11, 31, 23, 59, 59, 999);

/** Milliseconds since the epoch, or undefined when the value is not a timestamp the store can hold. */
export function parseTimestamp(value: unknown): number | undefined {
  if (typeof value === 'number')
    return Number.isFinite(value) ? inRange(Math.round(value * 1000)) : undefined;
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (EPOCH_SECONDS.test(text)) return inRange(Math.round(Number(text) * 1000));
  if (!ISO_DATE.test(text) && !ISO_DATE_TIME.test(text)) return undefined;
  // Date.parse rolls 2024-02-30 over into March: the calendar date must survive the round trip.
  const [y, m, d] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
  const day = new Date(Date.UTC(y, m - 1, d));
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== m - 1 || day.getUTCDate() !== d) return undefined;
  if (ISO_DATE.test(text)) return inRange(day.getTime());
  const withT = text.replace(' ', 'T');
  const zoned = /(Z|[+-]\d{2}:?\d{2})$/i.test(withT) ? withT : `${withT}Z`;
  const ms = Date.parse(zoned);
  return Number.isNaN(ms) ? undefined : inRange(ms);
}

function inRange(ms: number): number | undefined {
  return ms >= MIN_MS && ms <= MAX_MS ? ms : undefined;
}

/**
 * ClickHouse reads epoch-seconds text into DateTime64 only with 9 or 10 digits before the point: fewer
 * are taken for a date (`12` is the 12th of this month, `20240101` a day) or refused (`0.500`), and 11
 * (from 2286-11-20) are refused. Those are 1973-03-03 to 2286-11-20.
 */
const EPOCH_TEXT_MIN_MS = 100_000_000_000;
const EPOCH_TEXT_MAX_MS = 10_000_000_000_000;

/**
 * The text form ClickHouse reads into DateTime64(3, 'UTC'), to the millisecond: epoch seconds with three
 * decimals (`1700000000.123`), which costs a fraction of formatting a date on the hot path; outside the
 * range where ClickHouse reads that form (before 1973, after 2286), `YYYY-MM-DD hh:mm:ss.sss` in UTC.
 */
export function toStoreTime(ms: number): string {
  const whole = Math.round(ms);
  if (whole >= EPOCH_TEXT_MIN_MS && whole < EPOCH_TEXT_MAX_MS) return (whole / 1000).toFixed(3);
  return new Date(whole).toISOString().slice(0, 23).replace('T', ' ');
}
