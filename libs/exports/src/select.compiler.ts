import { ApiError } from '@cdp/contracts';
import { CUSTOM_DECIMAL } from '@cdp/store';
import type { ColumnType, ExportCatalog, ExportObject, ExportRelation } from './export-objects.js';
import type { Comparison, ExportSelect, Filter, FilterValue } from './export-request.js';

/** A relation path followed by a select, staged as its own table and joined by alias. */
export interface CompiledJoin {
  alias: string;
  /** The relation path from the base object (`product.parent_product`). */
  path: string;
  object: ExportObject;
  /** Alias of the table the relation starts from. */
  from: string;
  relation: ExportRelation;
}

export interface CompiledColumn {
  /** The column's name in the files: the field path as requested. */
  name: string;
  type: ColumnType;
  /** The DuckDB expression reading it (alias-qualified, quoted). */
  sql: string;
}

/**
 * A select compiled to DuckDB SQL over staged tables: the base object as alias `t0`, each relation
 * path joined once. User values never enter the SQL text: they are `$n` parameters.
 */
export interface CompiledSelect {
  object: ExportObject;
  columns: CompiledColumn[];
  joins: CompiledJoin[];
  where: string | undefined;
  orderBy: string | undefined;
  params: (string | number | boolean)[];
}

export const BASE_ALIAS = 't0';

/** Names reach SQL only after they matched the catalog, and quoted all the same. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The store's exact decimal of custom numbers, as DuckDB (and so Parquet's DECIMAL) spells it. */
export const DECIMAL_TYPE = `DECIMAL(${CUSTOM_DECIMAL.precision}, ${CUSTOM_DECIMAL.scale})`;

/**
 * What a decimal column is compared with: a filter value of any scale or size the comparison can
 * hold exactly (a value past the field's own 4 decimals still compares right, `x > 1.00005`).
 */
const DECIMAL_FILTER_TYPE = 'DECIMAL(38, 10)';
const DECIMAL_FILTER_TEXT = /^-?\d{1,28}(\.\d{1,10})?$/;

export function duckType(type: ColumnType): string {
  switch (type) {
    case 'integer':
      return 'BIGINT';
    case 'number':
      return 'DOUBLE';
    case 'decimal':
      return DECIMAL_TYPE;
    case 'boolean':
      return 'BOOLEAN';
    case 'timestamp':
      return 'TIMESTAMPTZ';
    default:
      return 'VARCHAR';
  }
}

/** The whole object, every column, no filter: a full-object export. */
export function compileObject(object: ExportObject): CompiledSelect {
  return {
    object,
    columns: object.columns.map((c) => ({ name: c.name, type: c.type, sql: column(BASE_ALIAS, c.name) })),
    joins: [],
    where: undefined,
    orderBy: undefined,
    params: [],
  };
}

function column(alias: string, name: string): string {
  return `${alias}.${quoteIdent(name)}`;
}

/**
 * Checks a select against the account's catalog (404 for a missing object, field or relation, with
 * the spec's "unable to locate" messages) and compiles it.
 */
export function compileSelect(select: ExportSelect, catalog: ExportCatalog): CompiledSelect {
  const object = catalog.object(select.object);
  if (!object) throw ApiError.notFound(`unable to locate object ${select.object}`);
  const joins: CompiledJoin[] = [];
  const params: (string | number | boolean)[] = [];

  /** Finds (or adds) the join for a relation path and returns the field's column. */
  const resolve = (path: string): { sql: string; type: ColumnType } => {
    const parts = path.split('.');
    const fieldName = parts.pop()!;
    let current = object;
    let alias = BASE_ALIAS;
    let walked = '';
    for (const relationName of parts) {
      const relation = catalog.relation(current.name, relationName);
      if (!relation) throw ApiError.notFound(`unable to locate relation ${current.name}.${relationName}`);
      walked = walked ? `${walked}.${relationName}` : relationName;
      let join = joins.find((j) => j.path === walked);
      if (!join) {
        join = {
          alias: `j${joins.length + 1}`,
          path: walked,
          object: catalog.object(relation.childObject)!,
          from: alias,
          relation,
        };
        joins.push(join);
      }
      current = join.object;
      alias = join.alias;
    }
    const field = current.columns.find((c) => c.name === fieldName);
    if (!field) throw ApiError.notFound(`unable to locate field ${current.name}.${fieldName}`);
    return { sql: column(alias, field.name), type: field.type };
  };

  const columns: CompiledColumn[] = [];
  for (const requested of select.fields) {
    if (requested === '*') {
      for (const c of object.columns) {
        if (!columns.some((x) => x.name === c.name))
          columns.push({ name: c.name, type: c.type, sql: column(BASE_ALIAS, c.name) });
      }
    } else if (!columns.some((x) => x.name === requested)) {
      columns.push({ name: requested, ...resolve(requested) });
    }
  }

  const bind = (value: string | number | boolean): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const where = select.filter ? compileFilter(select.filter, resolve, duckDialect(bind)) : undefined;
  const orderBy = select.sorts?.length
    ? select.sorts.map((s) => `${resolve(s.field).sql} ${s.order === 'desc' ? 'DESC' : 'ASC'}`).join(', ')
    : undefined;
  // Join keys must exist on both sides; checked here so a broken custom relation fails the request.
  for (const j of joins) {
    for (const jf of j.relation.joinFields) {
      const parentObject = j.from === BASE_ALIAS ? object : joins.find((x) => x.alias === j.from)!.object;
      if (!parentObject.columns.some((c) => c.name === jf.parent))
        throw ApiError.notFound(`unable to locate field ${parentObject.name}.${jf.parent}`);
      if (!j.object.columns.some((c) => c.name === jf.child))
        throw ApiError.notFound(`unable to locate field ${j.object.name}.${jf.child}`);
    }
  }
  return { object, columns, joins, where, orderBy, params };
}

type Resolve = (path: string) => { sql: string; type: ColumnType };
type Bind = (value: string | number | boolean) => string;

/** A filter value as the comparison needs it, before an engine spells it. */
type TypedValue =
  | { kind: 'text'; value: string }
  | { kind: 'double'; value: string }
  | { kind: 'decimal'; value: string }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'timestamp'; value: string };

/**
 * How one engine spells what a filter compiles to. The grammar, the checks of values against their
 * field's type and the NULL semantics are the compiler's alone; DuckDB (over an export's staged pages)
 * and the store's ClickHouse (a segment's members) differ only in parameters, casts and LIKE's escape.
 */
export interface FilterDialect {
  /** A parameter of the value's kind, cast to the type the comparison is made in. */
  value(v: TypedValue): string;
  /** A non-text column as text, for `like`. */
  text(sql: string): string;
  /** `sql LIKE pattern` (the operator as given: LIKE, NOT LIKE, ILIKE, NOT ILIKE); `\` escapes `_`, `%`, `\`. */
  like(sql: string, operator: string, pattern: string): string;
}

/** DuckDB, `$n` parameters in `params`' order. */
export function duckDialect(bind: Bind): FilterDialect {
  return {
    value: (v) => {
      switch (v.kind) {
        case 'text':
          return `CAST(${bind(v.value)} AS VARCHAR)`;
        case 'double':
          // As text: DuckDB binds a whole JS number as BIGINT, which 1e20 overflows.
          return `CAST(${bind(v.value)} AS DOUBLE)`;
        case 'decimal':
          return `CAST(${bind(v.value)} AS ${DECIMAL_FILTER_TYPE})`;
        case 'boolean':
          return `CAST(${bind(v.value)} AS BOOLEAN)`;
        case 'timestamp':
          return `CAST(${bind(v.value)} AS TIMESTAMPTZ)`;
      }
    },
    text: (sql) => `CAST(${sql} AS VARCHAR)`,
    like: (sql, op, pattern) => `(${sql} ${op} ${bind(pattern)} ESCAPE '\\')`,
  };
}

/**
 * The store's ClickHouse: named `{name:Type}` parameters in `params` (each name starts with `prefix`,
 * so the statement can carry other parameters too). ClickHouse's LIKE escapes with `\\` already.
 */
export function storeDialect(params: Record<string, unknown>, prefix: string): FilterDialect {
  const bind = (value: string | boolean, type: 'String' | 'Bool'): string => {
    const name = `${prefix}${Object.keys(params).length}`;
    params[name] = value;
    return `{${name}:${type}}`;
  };
  return {
    value: (v) => {
      switch (v.kind) {
        case 'text':
          return bind(v.value, 'String');
        case 'double':
          return `toFloat64(${bind(v.value, 'String')})`;
        case 'decimal':
          return `toDecimal128(${bind(v.value, 'String')}, 10)`;
        case 'boolean':
          return bind(v.value, 'Bool');
        case 'timestamp':
          return `parseDateTime64BestEffort(${bind(v.value, 'String')}, 3, 'UTC')`;
      }
    },
    text: (sql) => `toString(${sql})`,
    like: (sql, op, pattern) => `(${sql} ${op} ${bind(pattern, 'String')})`,
  };
}

/** A filter as a boolean SQL expression; `resolve` names each field's column. */
export function compileFilter(filter: Filter, resolve: Resolve, dialect: FilterDialect): string {
  if ('and' in filter) return `(${filter.and.map((f) => compileFilter(f, resolve, dialect)).join(' AND ')})`;
  if ('or' in filter) return `(${filter.or.map((f) => compileFilter(f, resolve, dialect)).join(' OR ')})`;
  if ('not' in filter) return `(NOT ${compileFilter(filter.not, resolve, dialect)})`;
  return compileComparison(filter, resolve, dialect);
}

function compileComparison(c: Comparison, resolve: Resolve, dialect: FilterDialect): string {
  const { sql, type } = resolve(c.field);
  switch (c.operator) {
    case 'is':
      return `(${sql} IS NULL)`;
    case 'is not':
      return `(${sql} IS NOT NULL)`;
    case 'like':
    case 'not like':
    case 'ilike':
    case 'not ilike': {
      // Only `%` is a wildcard (spec): `_` and `\` in the pattern match themselves.
      const pattern = String(c.value).replace(/[\\_]/g, (ch) => `\\${ch}`);
      return dialect.like(type === 'string' ? sql : dialect.text(sql), c.operator.toUpperCase(), pattern);
    }
    default: {
      const op = c.operator === '!=' ? '<>' : c.operator;
      return `(${sql} ${op} ${dialect.value(typedValue(c, type))})`;
    }
  }
}

/** A comparison value of the field's type; a value that cannot be one is a 400. */
function typedValue(c: Comparison, type: ColumnType): TypedValue {
  const value = c.value as Exclude<FilterValue, null>;
  const wrong = (what: string) =>
    ApiError.invalid([
      { field: 'select.filter', reason: `${c.field} is ${what}; ${JSON.stringify(value)} is not` },
    ]);
  switch (type) {
    case 'string':
      if (typeof value === 'boolean') throw wrong('text');
      return { kind: 'text', value: String(value) };
    case 'integer':
    case 'number':
    case 'decimal': {
      const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
      if (typeof n !== 'number' || !Number.isFinite(n)) throw wrong('a number');
      // Exact against an exact decimal: numeric text keeps every digit it was sent with.
      const text = typeof value === 'string' ? value.trim() : String(n);
      if (type === 'decimal' && DECIMAL_FILTER_TEXT.test(text)) return { kind: 'decimal', value: text };
      return { kind: 'double', value: String(n) };
    }
    case 'boolean':
      if (typeof value !== 'boolean') throw wrong('a boolean');
      return { kind: 'boolean', value };
    case 'timestamp': {
      const ms = timestampMs(value);
      if (ms === undefined) throw wrong('a timestamp (ISO 8601 or unix seconds)');
      return { kind: 'timestamp', value: new Date(ms).toISOString() };
    }
  }
}

/** A filter's timestamp value in ms (spec/NOTES.md "Timestamps": ISO 8601 or unix epoch seconds). */
export function timestampMs(value: FilterValue): number | undefined {
  const ms =
    typeof value === 'number'
      ? value * 1000
      : typeof value === 'string'
        ? /^-?\d+(\.\d+)?$/.test(value)
          ? Number(value) * 1000
          : Date.parse(/(Z|[+-]\d\d:?\d\d)$|^\d{4}-\d\d-\d\d$/.test(value) ? value : `${value}Z`)
        : NaN;
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? ms : undefined;
}
