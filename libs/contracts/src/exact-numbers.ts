import { randomUUID } from 'node:crypto';

/**
 * Custom number fields hold up to 18 digits (spec "Data types"), more than a double: JSON's numbers are
 * read and written here so that those digits survive both ways, in one place for every route.
 */

/** A run of this many characters of digits and points: the least a number a double may round needs. */
const LONG_RUN = 16;
/** A JSON string (kept as it is) or a number token. */
const TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/**
 * The JSON text with each number a double would round written as a string of its exact digits, which
 * the custom-field rule reads as the number it is (readCustomValue); a built-in field, whose column is a
 * double anyway, then refuses it as not a number instead of storing another value than the one sent.
 * Bodies without a long digit run (nearly all) are returned untouched.
 */
export function keepExactNumbers(text: string): string {
  if (!hasLongDigitRun(text)) return text;
  return text.replace(TOKEN, (token) =>
    token.startsWith('"') || sameNumber(token, String(Number(token))) ? token : `"${token}"`,
  );
}

/**
 * Whether the text has LONG_RUN digits and points in a row. Every body is checked on the ingest path,
 * so it looks at one character in LONG_RUN (any such run covers one of them) and measures the run only
 * around a digit it lands on: a few times faster than the regular expression `/[\d.]{16}/`, which tries
 * a match at every character (~1 µs an event of the codec thread's ~8).
 */
export function hasLongDigitRun(text: string): boolean {
  for (let i = LONG_RUN - 1; i < text.length; i += LONG_RUN) {
    if (!isDigitOrPoint(text.charCodeAt(i))) continue;
    let start = i;
    while (start > 0 && isDigitOrPoint(text.charCodeAt(start - 1))) start--;
    let end = i;
    while (end + 1 < text.length && isDigitOrPoint(text.charCodeAt(end + 1))) end++;
    if (end - start + 1 >= LONG_RUN) return true;
    // The character after the run is none: the next run that could be long enough covers end + LONG_RUN.
    i = end;
  }
  return false;
}

const isDigitOrPoint = (code: number): boolean => (code >= 48 && code <= 57) || code === 46;

/** Whether two decimal texts name the same number (trailing zeros after the point aside). */
function sameNumber(a: string, b: string): boolean {
  const canonical = (t: string) => (/[eE]/.test(t) ? t : t.includes('.') ? t.replace(/\.?0+$/, '') : t);
  if (/[eE]/.test(a)) return true; // exponent forms are outside every exact field's limits
  return canonical(a) === canonical(b);
}

/** A number known by its exact decimal text; written into JSON as that number, digit for digit. */
export class ExactNumber {
  constructor(readonly text: string) {}

  toJSON(): string {
    return `${MARK}${this.text}`;
  }
}

/** A mark no sent string can carry: the process's own random id. */
const MARK = `\u0000exact:${randomUUID()}:`;
const MARKED = new RegExp(`"\\\\u0000exact:${MARK.slice(7)}(-?\\d+(?:\\.\\d+)?)"`, 'g');

/** JSON text of a value whose ExactNumbers are written as JSON numbers with exactly their digits. */
export function exactJson(value: unknown): string {
  const text = JSON.stringify(value);
  return text.includes(MARK.slice(7)) ? text.replace(MARKED, '$1') : text;
}
