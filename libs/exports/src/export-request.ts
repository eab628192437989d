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
/** A comparison, a junction, or a negation (`not`: true where the filter is false; NULL stays unknown, as in SQL). */
export type Filter = Comparison | { and: Filter[] } | { or: Filter[] } | { not: Filter };

export interface Sort {
  field: string;
  order: 'asc' | 'desc';
}

export interface ExportSelect {
  object: string;
  fields: string[];
  /** Customers only: the members of this segment (docs/api-notes.md "Exports by segment"). */
  segment?: string;
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

/** An object name. */
export const OBJECT_NAME = /^[a-z][a-z0-9_]*$/;
/** A field of the object or a path through its relations (`product.parent_product.name`). */
export const FIELD_PATH = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/;

/** An operator as written (any case, any spacing: `NOT  LIKE`), as the spec's list names it. */
export function operatorOf(raw: unknown): FilterOperator | undefined {
  const op = typeof raw === 'string' ? raw.toLowerCase().trim().replace(/\s+/g, ' ') : undefined;
  return (FILTER_OPERATORS as readonly (string | undefined)[]).includes(op)
    ? (op as FilterOperator)
    : undefined;
}

/** A format or delimiter as written (any case), or undefined when it is none of `allowed`. */
export function pick<T extends string>(raw: unknown, allowed: readonly T[], fallback: T): T | undefined {
  if (raw === undefined || raw === null) return fallback;
  if (typeof raw !== 'string') return undefined;
  return allowed.find((a) => a.toLowerCase() === raw.toLowerCase());
}

/**
 * The body of `POST /v3/exports` as the API's DTOs have checked it (shape, formats, delimiters, the
 * filter's grammar: libs/http-api's export-request.dto.ts): members as the client wrote them.
 */
export interface ExportRequest {
  format?: string | null;
  delimiter?: string | null;
  objects?: string[] | null;
  select?: {
    object: string;
    fields: string[];
    segment?: string | null;
    filter?: RequestFilter | null;
    sorts?: { field: string; order?: string | null }[] | null;
  };
}
export type RequestFilter =
  | { field: string; operator: string; value: FilterValue }
  | { and: RequestFilter[] }
  | { or: RequestFilter[] }
  | { not: RequestFilter };

/**
 * What a checked request asks for: the defaults filled in (CSV, comma, every object), formats,
 * delimiters and operators in the spec's spelling, the objects named once. Whether the objects, fields
 * and relations exist is decided against the account's catalog afterwards (404).
 */
export function exportDetailOf(request: ExportRequest): ExportDetail {
  const format = pick(request.format, EXPORT_FORMATS, 'CSV')!;
  const delimiter = pick(request.delimiter, EXPORT_DELIMITERS, 'comma')!;
  if (request.select === undefined)
    return { format, delimiter, objects: [...new Set(request.objects ?? [])] };
  const { object, fields, segment, filter, sorts } = request.select;
  const select: ExportSelect = {
    object,
    fields,
    ...(segment !== undefined && segment !== null ? { segment } : {}),
    ...(filter !== undefined && filter !== null ? { filter: filterOf(filter) } : {}),
    ...(sorts !== undefined && sorts !== null
      ? { sorts: sorts.map((s): Sort => ({ field: s.field, order: s.order === 'desc' ? 'desc' : 'asc' })) }
      : {}),
  };
  return { format, delimiter, objects: [object], select };
}

function filterOf(filter: RequestFilter): Filter {
  if ('and' in filter) return { and: filter.and.map(filterOf) };
  if ('or' in filter) return { or: filter.or.map(filterOf) };
  if ('not' in filter) return { not: filterOf(filter.not) };
  return { field: filter.field, operator: operatorOf(filter.operator)!, value: filter.value };
}
