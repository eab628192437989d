import { isUtf8 } from 'node:buffer';
import { ApiError, type Invalid } from './errors.js';
import { keepExactNumbers } from './exact-numbers.js';

/**
 * Reads a request body as JSON, refusing what the store could not keep or the code must not meet:
 * bytes that are not UTF-8, strings (values and keys) with a lone surrogate, which JSON lets through as
 * `\ud800` escapes but no column, CSV or Parquet file can hold (spec "Data types": a string is UTF-8),
 * and `__proto__` / `constructor.prototype` keys, which would reach an object's prototype in any code
 * that copies fields by assignment. Each is a 400 naming the field (with the record index in a batch).
 */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) throw ApiError.badRequest('request body is empty');
  const utf8 = isUtf8(body);
  let value: unknown;
  try {
    value = JSON.parse(keepExactNumbers(utf8 ? body.toString('utf8') : markInvalidBytes(body)));
  } catch {
    throw ApiError.badRequest('request body is not valid JSON');
  }
  // A lone surrogate or a hidden `__proto__` needs a `\u` escape; a plain one needs its name. A body with
  // neither (nearly all of them) is not walked.
  if (utf8 && !mayHide(body)) return value;
  const invalids = bodyProblems(value, utf8 ? WELL_FORMED : VALID_UTF8);
  // Bytes that are not UTF-8 outside any string (whitespace, say) name no field but are refused all the same.
  if (!utf8 && invalids.length === 0) invalids.push({ field: 'body', reason: VALID_UTF8 });
  if (invalids.length) throw ApiError.invalid(invalids);
  return value;
}

const WELL_FORMED = 'must be well-formed Unicode (a lone surrogate is no character)';
const VALID_UTF8 = 'must be valid UTF-8';
const RESERVED = 'is a reserved name';

function mayHide(body: Buffer): boolean {
  return body.includes('\\u') || body.includes('__proto__') || body.includes('prototype');
}

/**
 * Every problem of a parsed body, by field path (`data.order.items.0.sku`); the elements of a top-level
 * array are records, named by their index in `event`.
 */
export function bodyProblems(value: unknown, surrogateReason = WELL_FORMED): Invalid[] {
  const out: Invalid[] = [];
  if (Array.isArray(value)) value.forEach((item, event) => walk(item, out, surrogateReason, event));
  else walk(value, out, surrogateReason);
  return out;
}

/** No more than this many problems are listed: a body full of them needs only a few to be fixed. */
const MAX_LISTED = 100;

/**
 * Walks the value with a stack of its own, not by recursion: a hostile body nested thousands deep
 * would otherwise overflow the call stack (a 500 instead of the 400). Paths are linked to their
 * parent and spelled out only for a field that is reported.
 */
function walk(root: unknown, out: Invalid[], reason: string, event?: number): void {
  interface Step {
    value: unknown;
    key: string | undefined;
    parent: Step | undefined;
  }
  const pathOf = (step: Step | undefined): string[] => {
    const names: string[] = [];
    for (let s = step; s?.key !== undefined; s = s.parent) names.push(s.key);
    return names.reverse();
  };
  const report = (field: string[], why: string) => {
    const invalid: Invalid = { field: field.length ? field.map(printable).join('.') : 'body', reason: why };
    out.push(event === undefined ? invalid : { event, ...invalid });
  };
  const stack: Step[] = [{ value: root, key: undefined, parent: undefined }];
  while (stack.length && out.length < MAX_LISTED) {
    const step = stack.pop()!;
    const { value } = step;
    if (typeof value === 'string') {
      if (hasLoneSurrogate(value)) report(pathOf(step), reason);
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--)
        stack.push({ value: value[i], key: String(i), parent: step });
    } else if (value !== null && typeof value === 'object') {
      const entries: [string, unknown][] = Object.entries(value as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, item] = entries[i]!;
        const at = { value: item, key, parent: step };
        if (hasLoneSurrogate(key)) report(pathOf(at), `field name ${reason}`);
        else if (key === '__proto__' || (key === 'prototype' && step.key === 'constructor'))
          report(pathOf(at), RESERVED);
        else stack.push(at);
      }
    }
  }
}

const LONE_SURROGATE = /\p{Surrogate}/u;

export function hasLoneSurrogate(text: string): boolean {
  // With the u flag a pair is one code point: only a surrogate standing alone matches.
  return LONE_SURROGATE.test(text);
}

/** A field name fit for the answer: a lone surrogate shown as U+FFFD. */
function printable(name: string): string {
  return hasLoneSurrogate(name) ? name.replace(/\p{Surrogate}/gu, '\uFFFD') : name;
}

/**
 * The body as text with each byte that is not part of a UTF-8 sequence written as a `\udcXX` escape:
 * inside a JSON string it becomes a lone surrogate, which the walk then reports on its field.
 */
function markInvalidBytes(body: Buffer): string {
  const parts: string[] = [];
  let start = 0;
  let i = 0;
  while (i < body.length) {
    const length = sequenceLength(body, i);
    if (length > 0) {
      i += length;
      continue;
    }
    parts.push(body.toString('utf8', start, i), `\\udc${body[i]!.toString(16).padStart(2, '0')}`);
    i += 1;
    start = i;
  }
  parts.push(body.toString('utf8', start));
  return parts.join('');
}

/** The length of the well-formed UTF-8 sequence at `i` (Unicode Table 3-7), or 0 when there is none. */
function sequenceLength(b: Buffer, i: number): number {
  const c = b[i]!;
  if (c < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf) => i + k < b.length && b[i + k]! >= lo && b[i + k]! <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c === 0xee || c === 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

/**
 * The bytes of a JSON body the HTTP layer left unread, for a route that reads it off the main thread
 * (`POST /v3/events`: IngestCodec). `value()` reads it here, for the rare code that needs the records
 * on the main thread (the event inspector); a body that does not parse gives undefined.
 */
export class RawJsonBody {
  constructor(readonly bytes: Buffer) {}

  value(): unknown {
    try {
      return parseJsonBody(this.bytes);
    } catch {
      return undefined;
    }
  }
}
