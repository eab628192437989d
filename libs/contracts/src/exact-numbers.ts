import { randomUUID } from 'node:crypto';

/**
 * Custom number fields hold up to 18 digits (spec "Data types"), more than a double: JSON's numbers are
 * read and written here so that those digits survive both ways, in one place for every route.
 */

/** A run of 16 characters of digits and points: the least a number a double may round needs. */
const LONG_NUMBER = /[\d.]{16}/;
/** A JSON string (kept as it is) or a number token. */
const TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/**
 * The JSON text with each number a double would round written as a string of its exact digits, which
 * the custom-field rule reads as the number it is (readCustomValue); a built-in field, whose column is a
 * double anyway, then refuses it as not a number instead of storing another value than the one sent.
 * Bodies without a long digit run (nearly all) are returned untouched.
 */
export function keepExactNumbers(text: string): string {
  if (!LONG_NUMBER.test(text)) return text;
  return text.replace(TOKEN, (token) =>
    token.startsWith('"') || sameNumber(token, String(Number(token))) ? token : `"${token}"`,
  );
}

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
