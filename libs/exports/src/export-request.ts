import { ApiError, type Invalid } from '@cdp/contracts';

export const EXPORT_FORMATS = ['CSV', 'Parquet'] as const;
export const EXPORT_DELIMITERS = ['comma', 'tab', 'pipe'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
export type ExportDelimiter = (typeof EXPORT_DELIMITERS)[number];

/** spec "Exports (beta)": the comparison operators of a select filter. */
export const FILTER_OPERATORS = [
  '=',
  '!=',
  '>',
  '>=',
  '<',
  '<=',
  'like',
  'not like',
  'ilike',
  'not ilike',
  'is',
  'is not',
] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

export type FilterValue = string | number | boolean | null;
export interface Comparison {
  field: string;
  operator: FilterOperator;
  value: FilterValue;
}
export type Filter = Comparison | { and: Filter[] } | { or: Filter[] };

export interface Sort {
  field: string;
  order: 'asc' | 'desc';
}

export interface ExportSelect {
  object: string;
  fields: string[];
  filter?: Filter;
  sorts?: Sort[];
}

/** What an export asks for, as the record's `detail` echoes it. */
export interface ExportDetail {
  format: ExportFormat;
  delimiter: ExportDelimiter;
  objects: string[];
  select?: ExportSelect;
}

/**
 * A filter nests "to any depth" (spec); a bound keeps a hostile body from exhausting the stack.
 * Deeper than any hand-written or generated filter we know of.
 */
export const MAX_FILTER_DEPTH = 256;

const NAME = /^[a-z][a-z0-9_]*$/;
/** A field of the object or a path through its relations (`product.parent_product.name`). */
const FIELD_PATH = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function pick<T extends string>(raw: unknown, allowed: readonly T[], fallback: T): T | undefined {
  if (raw === undefined || raw === null) return fallback;
  if (typeof raw !== 'string') return undefined;
  return allowed.find((a) => a.toLowerCase() === raw.toLowerCase());
}

/**
 * Reads the body of `POST /v3/exports` (spec "Exports (beta)"): shape, formats, delimiters and the
 * filter's grammar. Whether the objects, fields and relations exist is decided against the account's
 * catalog afterwards (404).
 */
export function parseExportRequest(body: unknown): ExportDetail {
  if (!isObject(body)) throw ApiError.badRequest('the body must be a JSON object');
  const invalids: Invalid[] = [];
  const format = pick(body.format, EXPORT_FORMATS, 'CSV');
  if (!format) invalids.push({ field: 'format', reason: `must be one of ${EXPORT_FORMATS.join(', ')}` });
  const delimiter = pick(body.delimiter, EXPORT_DELIMITERS, 'comma');
  if (!delimiter)
    invalids.push({ field: 'delimiter', reason: `must be one of ${EXPORT_DELIMITERS.join(', ')}` });

  let objects: string[] = [];
  let select: ExportSelect | undefined;
  if (body.select !== undefined && body.objects !== undefined) {
    invalids.push({ field: ['objects', 'select'], reason: 'give either objects or select, not both' });
  } else if (body.select !== undefined) {
    select = parseSelect(body.select, invalids);
    if (select) objects = [select.object];
  } else if (body.objects !== undefined && body.objects !== null) {
    if (
      !Array.isArray(body.objects) ||
      body.objects.length === 0 ||
      !body.objects.every((o) => typeof o === 'string' && NAME.test(o))
    ) {
      invalids.push({ field: 'objects', reason: 'must be a non-empty array of object names' });
    } else {
      objects = [...new Set(body.objects as string[])];
    }
  }
  if (invalids.length) throw ApiError.invalid(invalids);
  return { format: format!, delimiter: delimiter!, objects, ...(select ? { select } : {}) };
}

function parseSelect(raw: unknown, invalids: Invalid[]): ExportSelect | undefined {
  if (!isObject(raw)) {
    invalids.push({ field: 'select', reason: 'must be an object with object and fields' });
    return undefined;
  }
  const before = invalids.length;
  if (typeof raw.object !== 'string' || !NAME.test(raw.object)) {
    invalids.push({ field: 'select.object', reason: 'is required: the name of the object to export' });
  }
  const fields = raw.fields;
  if (
    !Array.isArray(fields) ||
    fields.length === 0 ||
    !fields.every((f) => typeof f === 'string' && (f === '*' || FIELD_PATH.test(f)))
  ) {
    invalids.push({
      field: 'select.fields',
      reason: 'is required: a non-empty array of field names or paths (product.name), or ["*"]',
    });
  } else if (new Set(fields).size !== fields.length) {
    invalids.push({ field: 'select.fields', reason: 'names a field twice' });
  }
  let filter: Filter | undefined;
  if (raw.filter !== undefined && raw.filter !== null) {
    filter = parseFilter(raw.filter, 'select.filter', 0, invalids);
  }
  let sorts: Sort[] | undefined;
  if (raw.sorts !== undefined && raw.sorts !== null) {
    if (!Array.isArray(raw.sorts)) {
      invalids.push({ field: 'select.sorts', reason: 'must be an array of {field, order}' });
    } else {
      sorts = raw.sorts.map((s, i) => parseSort(s, `select.sorts[${i}]`, invalids));
    }
  }
  if (invalids.length > before) return undefined;
  return {
    object: raw.object as string,
    fields: fields as string[],
    ...(filter ? { filter } : {}),
    ...(sorts ? { sorts } : {}),
  };
}

function parseSort(raw: unknown, at: string, invalids: Invalid[]): Sort {
  if (!isObject(raw) || typeof raw.field !== 'string' || !FIELD_PATH.test(raw.field)) {
    invalids.push({ field: `${at}.field`, reason: 'must name a field' });
    return { field: '', order: 'asc' };
  }
  const order = raw.order === undefined || raw.order === null ? 'asc' : raw.order;
  if (order !== 'asc' && order !== 'desc') {
    invalids.push({ field: `${at}.order`, reason: 'must be asc or desc' });
    return { field: raw.field, order: 'asc' };
  }
  return { field: raw.field, order };
}

function parseFilter(raw: unknown, at: string, depth: number, invalids: Invalid[]): Filter | undefined {
  if (depth > MAX_FILTER_DEPTH) {
    invalids.push({ field: at, reason: `filters nest at most ${MAX_FILTER_DEPTH} levels deep` });
    return undefined;
  }
  if (!isObject(raw)) {
    invalids.push({ field: at, reason: 'must be a comparison {field, operator, value} or {and|or: [...]}' });
    return undefined;
  }
  const keys = Object.keys(raw);
  for (const junction of ['and', 'or'] as const) {
    if (!(junction in raw)) continue;
    const parts = raw[junction];
    if (keys.length !== 1 || !Array.isArray(parts) || parts.length === 0) {
      invalids.push({ field: `${at}.${junction}`, reason: 'must be the only key, with a non-empty array' });
      return undefined;
    }
    const inner = parts.map((p, i) => parseFilter(p, `${at}.${junction}[${i}]`, depth + 1, invalids));
    if (inner.some((f) => f === undefined)) return undefined;
    return junction === 'and' ? { and: inner as Filter[] } : { or: inner as Filter[] };
  }
  const { field, operator, value } = raw;
  const extra = keys.filter((k) => k !== 'field' && k !== 'operator' && k !== 'value');
  if (extra.length) {
    invalids.push({ field: at, reason: `unknown key ${extra[0]}: a comparison has field, operator, value` });
    return undefined;
  }
  if (typeof field !== 'string' || !FIELD_PATH.test(field)) {
    invalids.push({ field: `${at}.field`, reason: 'must name a field' });
    return undefined;
  }
  const op = typeof operator === 'string' ? operator.toLowerCase().trim().replace(/\s+/g, ' ') : undefined;
  if (!op || !(FILTER_OPERATORS as readonly string[]).includes(op)) {
    invalids.push({ field: `${at}.operator`, reason: `must be one of ${FILTER_OPERATORS.join(', ')}` });
    return undefined;
  }
  if (!('value' in raw)) {
    invalids.push({ field: `${at}.value`, reason: 'is required (null for is / is not)' });
    return undefined;
  }
  const nullOp = op === 'is' || op === 'is not';
  if (nullOp && value !== null) {
    invalids.push({ field: `${at}.value`, reason: `${op} compares with null only` });
    return undefined;
  }
  if (!nullOp && value === null) {
    invalids.push({ field: `${at}.value`, reason: `null compares with is or is not, not ${op}` });
    return undefined;
  }
  if (value !== null && !['string', 'number', 'boolean'].includes(typeof value)) {
    invalids.push({ field: `${at}.value`, reason: 'must be a string, number, boolean or null' });
    return undefined;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) {
    invalids.push({ field: `${at}.value`, reason: 'must be a finite number' });
    return undefined;
  }
  if (op.includes('like') && typeof value !== 'string') {
    invalids.push({ field: `${at}.value`, reason: `${op} needs a string pattern` });
    return undefined;
  }
  return { field, operator: op as FilterOperator, value: value as FilterValue };
}
