import { ApiProperty, ApiPropertyOptional, PickType, getSchemaPath } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { ValidateIf, ValidateNested } from 'class-validator';
import {
  EXPORT_DELIMITERS,
  EXPORT_FORMATS,
  FIELD_PATH,
  FILTER_OPERATORS,
  MAX_FILTER_DEPTH,
  OBJECT_NAME,
  operatorOf,
  pick,
  type FilterValue,
} from '@cdp/exports';
import { MAX_NAME_LENGTH } from '@cdp/schema';
import { MAX_SEGMENT_ID_LENGTH, SEGMENT_ID } from '@cdp/segments';
import { Obeys } from '../validation/constraints.js';
import { OneProblemAtATime } from '../validation/envelope-validation.pipe.js';

/*
 * The body of `POST /v3/exports` (spec "Exports (beta)"): whole objects, or one select whose filter is a
 * comparison or an and/or of filters nested to any depth. The filter is a union told apart by its keys:
 * `filterOf` builds the DTO of each node's kind (a small discriminator by keys, as class-transformer's
 * discriminators need a type property the spec does not have). Rules needing the account's catalog
 * (does the object, field or relation exist; does a value fit its field's type) are the select
 * compiler's, afterwards (404, 400).
 */

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const present = (v: unknown) => v !== undefined && v !== null;

/** The keys each filter node was written with: its kind's rules read them (`and` alone, no unknown key). */
const writtenKeys = new WeakMap<object, readonly string[]>();
const keysOf = (node: object): readonly string[] => writtenKeys.get(node) ?? [];

const SNAKE_NAME = {
  type: 'string' as const,
  pattern: '^[a-z][a-z0-9]*(_[a-z0-9]+)*$',
  maxLength: MAX_NAME_LENGTH,
};

/** A node where a filter should be that is no object, or that nests too deep: refused as a whole. */
@OneProblemAtATime()
export class UnusableFilter {
  constructor(readonly tooDeep: boolean) {}

  @Obeys(
    'isFilter',
    (_, node) =>
      node.tooDeep
        ? `filters nest at most ${MAX_FILTER_DEPTH} levels deep`
        : 'must be a comparison {field, operator, value}, {and|or: [...]} or {not: filter}',
    { context: { whole: true } },
  )
  readonly usable?: never;
}

/** `{field, operator, value}`: checked in the order a reader stops at the first problem. */
@OneProblemAtATime()
export class ComparisonDto {
  /** Never sent: a comparison names nothing but its three keys. */
  @Obeys(
    'hasComparisonKeys',
    (_, node) => {
      const extra = keysOf(node).filter((k) => k !== 'field' && k !== 'operator' && k !== 'value');
      return extra.length ? `unknown key ${extra[0]}: a comparison has field, operator, value` : undefined;
    },
    { context: { whole: true } },
  )
  readonly onlyItsKeys?: never;

  @ApiProperty({ type: 'string', description: 'a field or a relation path (customer.email)' })
  @Obeys('isFieldPath', (v) =>
    typeof v === 'string' && FIELD_PATH.test(v) ? undefined : 'must name a field',
  )
  field!: string;

  @ApiProperty({ enum: [...FILTER_OPERATORS] })
  @Obeys('isOperator', (v) => (operatorOf(v) ? undefined : `must be one of ${FILTER_OPERATORS.join(', ')}`))
  operator!: string;

  @ApiProperty({
    anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }],
    description: 'null with is / is not only',
  })
  @Obeys('isComparedValue', (value, node) => valueProblem(value, node))
  value!: FilterValue;
}

function valueProblem(value: unknown, node: Record<string, unknown>): string | undefined {
  if (!keysOf(node).includes('value')) return 'is required (null for is / is not)';
  const op = operatorOf(node.operator);
  if (!op) return undefined; // the operator's own rule answers first
  const nullOp = op === 'is' || op === 'is not';
  if (nullOp && value !== null) return `${op} compares with null only`;
  if (!nullOp && value === null) return `null compares with is or is not, not ${op}`;
  if (value !== null && !['string', 'number', 'boolean'].includes(typeof value))
    return 'must be a string, number, boolean or null';
  if (typeof value === 'number' && !Number.isFinite(value)) return 'must be a finite number';
  if (op.includes('like') && typeof value !== 'string') return `${op} needs a string pattern`;
  return undefined;
}

/** The one key of a junction with a non-empty list of filters, or the reason it is not. */
const junctionProblem = (parts: unknown, node: object) =>
  keysOf(node).length === 1 && Array.isArray(parts) && parts.length > 0
    ? undefined
    : 'must be the only key, with a non-empty array';

const FILTERS = {
  type: 'array' as const,
  minItems: 1,
  items: {
    oneOf: ['ComparisonDto', 'AndFilterDto', 'OrFilterDto', 'NotFilterDto'].map((n) => ({
      $ref: getSchemaPath(n),
    })),
  },
};

export class AndFilterDto {
  @ApiProperty(FILTERS)
  @Obeys('isJunction', junctionProblem)
  @ValidateNested({ each: true })
  and!: FilterNode[];
}

export class OrFilterDto {
  @ApiProperty(FILTERS)
  @Obeys('isJunction', junctionProblem)
  @ValidateNested({ each: true })
  or!: FilterNode[];
}

/** `{not: filter}`: the one key, with one filter (true where it is false; NULL stays unknown, as in SQL). */
export class NotFilterDto {
  @ApiProperty({
    description: 'a filter',
    oneOf: ['ComparisonDto', 'AndFilterDto', 'OrFilterDto', 'NotFilterDto'].map((n) => ({
      $ref: getSchemaPath(n),
    })),
  })
  @Obeys('isNegation', (_, node) =>
    keysOf(node).length === 1 ? undefined : 'must be the only key, with one filter',
  )
  @ValidateNested()
  not!: FilterNode;
}

export type FilterNode = ComparisonDto | AndFilterDto | OrFilterDto | NotFilterDto | UnusableFilter;

/** The DTO of a filter node, told apart by its keys (`and` first, then `or`, `not`, else a comparison). */
export function filterOf(raw: unknown, depth = 0): FilterNode {
  if (depth > MAX_FILTER_DEPTH) return new UnusableFilter(true);
  if (!isObject(raw)) return new UnusableFilter(false);
  if (!('and' in raw) && !('or' in raw) && 'not' in raw) {
    const node = new NotFilterDto();
    writtenKeys.set(node, Object.keys(raw));
    node.not = filterOf(raw.not, depth + 1);
    return node;
  }
  const junction = 'and' in raw ? 'and' : 'or' in raw ? 'or' : undefined;
  const node =
    junction === 'and' ? new AndFilterDto() : junction === 'or' ? new OrFilterDto() : new ComparisonDto();
  writtenKeys.set(node, Object.keys(raw));
  if (junction) {
    const parts = raw[junction];
    (node as unknown as Record<string, unknown>)[junction] = Array.isArray(parts)
      ? parts.map((part) => filterOf(part, depth + 1))
      : parts;
  } else {
    Object.assign(node, { field: raw.field, operator: raw.operator, value: raw.value });
  }
  return node;
}

@OneProblemAtATime()
export class SortDto {
  @ApiProperty({ type: 'string' })
  @Obeys('isFieldPath', (v) =>
    typeof v === 'string' && FIELD_PATH.test(v) ? undefined : 'must name a field',
  )
  field!: string;

  @ApiPropertyOptional({ enum: ['asc', 'desc'], default: 'asc' })
  @ValidateIf((sort: SortDto) => present(sort.order))
  @Obeys('isSortOrder', (v) => (v === 'asc' || v === 'desc' ? undefined : 'must be asc or desc'))
  order?: 'asc' | 'desc';
}

const FIELDS_REASON = 'is required: a non-empty array of field names or paths (product.name), or ["*"]';

export class ExportSelectDto {
  @ApiProperty(SNAKE_NAME)
  @Obeys('isObjectName', (v) =>
    typeof v === 'string' && OBJECT_NAME.test(v)
      ? undefined
      : 'is required: the name of the object to export',
  )
  object!: string;

  @ApiProperty({
    type: 'array',
    minItems: 1,
    items: { type: 'string' },
    description: 'field names or paths, or ["*"]',
  })
  @Obeys('isFieldList', (fields) => {
    if (
      !Array.isArray(fields) ||
      fields.length === 0 ||
      !fields.every((f) => typeof f === 'string' && (f === '*' || FIELD_PATH.test(f)))
    )
      return FIELDS_REASON;
    return new Set(fields).size === fields.length ? undefined : 'names a field twice';
  })
  fields!: string[];

  @ApiPropertyOptional({
    type: 'string',
    pattern: SEGMENT_ID.source,
    description: 'customers only: the members of this segment (the filter narrows them further)',
  })
  @ValidateIf((select: ExportSelectDto) => present(select.segment))
  @Obeys('isSegmentSelect', (v, select) =>
    typeof v !== 'string' || !SEGMENT_ID.test(v) || v.length > MAX_SEGMENT_ID_LENGTH
      ? 'must be a segment id'
      : select.object !== 'customers'
        ? 'selects customers: object must be customers'
        : undefined,
  )
  segment?: string | null;

  @ApiPropertyOptional({
    description: 'a comparison, or {and: [...]} / {or: [...]} / {not: filter} nesting filters',
    oneOf: [
      { $ref: getSchemaPath(ComparisonDto) },
      { $ref: getSchemaPath(AndFilterDto) },
      { $ref: getSchemaPath(OrFilterDto) },
      { $ref: getSchemaPath(NotFilterDto) },
    ],
  })
  @ValidateIf((select: ExportSelectDto) => present(select.filter))
  @Transform(({ obj }: { obj: Record<string, unknown> }) =>
    present(obj.filter) ? filterOf(obj.filter) : obj.filter,
  )
  @ValidateNested()
  filter?: FilterNode | null;

  @ApiPropertyOptional({ type: [SortDto] })
  @ValidateIf((select: ExportSelectDto) => present(select.sorts))
  @Obeys('isSortList', (v) => (Array.isArray(v) ? undefined : 'must be an array of {field, order}'))
  @Transform(({ obj }: { obj: Record<string, unknown> }) =>
    Array.isArray(obj.sorts)
      ? obj.sorts.map((s) =>
          Object.assign(new SortDto(), isObject(s) ? { field: s.field, order: s.order } : {}),
        )
      : obj.sorts,
  )
  @ValidateNested({ each: true })
  sorts?: SortDto[] | null;
}

const oneOf = (allowed: readonly string[], fallback: string) => (v: unknown) =>
  pick(v, allowed, fallback) ? undefined : `must be one of ${allowed.join(', ')}`;

/** `POST /v3/exports`: whole objects (every one when `objects` is absent), or one `select`: never both. */
export class ExportRequestDto {
  @ApiPropertyOptional({ enum: [...EXPORT_FORMATS], default: 'CSV', description: 'any case' })
  @Obeys('isFormat', oneOf(EXPORT_FORMATS, 'CSV'))
  format?: string;

  @ApiPropertyOptional({ enum: [...EXPORT_DELIMITERS], default: 'comma', description: 'any case' })
  @Obeys('isDelimiter', oneOf(EXPORT_DELIMITERS, 'comma'))
  delimiter?: string;

  /** Never sent: objects and select at once, named together. */
  @Obeys(
    'isObjectsOrSelect',
    (_, body) =>
      body.select !== undefined && body.objects !== undefined
        ? 'give either objects or select, not both'
        : undefined,
    { context: { field: ['objects', 'select'] } },
  )
  readonly objectsOrSelect?: never;

  @ApiPropertyOptional({ type: 'array', minItems: 1, items: SNAKE_NAME, description: 'absent: every object' })
  @ValidateIf((body: ExportRequestDto) => body.select === undefined && present(body.objects))
  @Obeys('isObjectList', (v) =>
    Array.isArray(v) && v.length > 0 && v.every((o) => typeof o === 'string' && OBJECT_NAME.test(o))
      ? undefined
      : 'must be a non-empty array of object names',
  )
  objects?: string[];

  @ApiPropertyOptional({ type: ExportSelectDto })
  @ValidateIf((body: ExportRequestDto) => body.objects === undefined && body.select !== undefined)
  @Obeys('isSelect', (v) => (isObject(v) ? undefined : 'must be an object with object and fields'))
  @Type(() => ExportSelectDto)
  @ValidateNested()
  select?: ExportSelectDto;
}

/*
 * The two forms of the body as the OpenAPI document gives them (never both: `objects` or `select`),
 * derived from ExportRequestDto's own properties.
 */
export class WholeObjectsRequestDto extends PickType(ExportRequestDto, [
  'format',
  'delimiter',
  'objects',
] as const) {}

export class SelectRequestDto extends PickType(ExportRequestDto, ['format', 'delimiter'] as const) {
  @ApiProperty({ type: ExportSelectDto })
  select!: ExportSelectDto;
}
