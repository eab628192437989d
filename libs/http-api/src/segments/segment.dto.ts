import type { ArgumentMetadata, PipeTransform } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { ValidateIf, ValidateNested } from 'class-validator';
import { ApiError } from '@cdp/contracts';
import { operatorOf, type Filter, type RequestFilter } from '@cdp/exports';
import {
  MAX_EVENT_CONDITIONS,
  MAX_SEGMENT_ID_LENGTH,
  MAX_WITHIN_DAYS,
  SEGMENT_ID,
  type EventCondition,
  type SegmentInput,
} from '@cdp/segments';
import { Obeys } from '../validation/constraints.js';
import { EnvelopeValidationPipe } from '../validation/envelope-validation.pipe.js';
import {
  AndFilterDto,
  ComparisonDto,
  filterOf,
  OrFilterDto,
  NotFilterDto,
  type FilterNode,
} from '../exports/export-request.dto.js';
import { pruned } from '../exports/export-request.pipe.js';
import { MAX_FILTER_DEPTH } from '@cdp/exports';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const present = (v: unknown) => v !== undefined && v !== null;
const isCount = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
const MAX_TEXT = 1024;
const CONDITION_KEYS = ['type', 'action', 'within_days', 'min_count', 'max_count', 'min_total', 'max_total'];
/** Order totals are exact to 1/10000 (docs/api-notes.md "Orders"); a bound past that could not be met exactly. */
const MAX_TOTAL = 1e15;
const isAmount = (v: unknown) =>
  typeof v === 'number' &&
  Number.isFinite(v) &&
  Math.abs(v) <= MAX_TOTAL &&
  Math.abs(Math.round(v * 1e4) - v * 1e4) < 1e-6;

/** Why one event condition cannot be used, or undefined. */
function conditionProblem(c: unknown): string | undefined {
  if (!isObject(c))
    return 'each must be an object {type, action?, within_days, min_count?, max_count?, min_total?, max_total?}';
  const extra = Object.keys(c).find((k) => !CONDITION_KEYS.includes(k));
  if (extra) return `unknown key ${extra}: a condition has ${CONDITION_KEYS.join(', ')}`;
  if (typeof c.type !== 'string' || c.type.trim() === '' || c.type.length > MAX_TEXT)
    return 'type is required: an event type';
  if (
    present(c.action) &&
    (typeof c.action !== 'string' || c.action.trim() === '' || c.action.length > MAX_TEXT)
  )
    return 'action must be a non-empty string';
  if (
    !Number.isInteger(c.within_days) ||
    (c.within_days as number) < 1 ||
    (c.within_days as number) > MAX_WITHIN_DAYS
  )
    return `within_days is required: a whole number of days from 1 to ${MAX_WITHIN_DAYS}`;
  if (present(c.min_count) && !isCount(c.min_count)) return 'min_count must be a whole number ≥ 0';
  if (present(c.max_count) && !isCount(c.max_count)) return 'max_count must be a whole number ≥ 0';
  if (present(c.min_count) && present(c.max_count) && (c.min_count as number) > (c.max_count as number))
    return 'min_count must not exceed max_count';
  for (const key of ['min_total', 'max_total'])
    if (present(c[key]) && !isAmount(c[key]))
      return `${key} must be a number of at most ${MAX_TOTAL} with at most 4 decimals`;
  if (present(c.min_total) && present(c.max_total) && (c.min_total as number) > (c.max_total as number))
    return 'min_total must not exceed max_total';
  return undefined;
}

export class SegmentDefinitionDto {
  @ApiPropertyOptional({
    description:
      "the exports API's filter over customer fields: a comparison, or {and: [...]} / {or: [...]} / {not: filter}",
    oneOf: [
      { $ref: getSchemaPath(ComparisonDto) },
      { $ref: getSchemaPath(AndFilterDto) },
      { $ref: getSchemaPath(OrFilterDto) },
      { $ref: getSchemaPath(NotFilterDto) },
    ],
  })
  @ValidateIf((d: SegmentDefinitionDto) => present(d.customer))
  @Transform(({ obj }: { obj: Record<string, unknown> }) =>
    present(obj.customer) ? filterOf(obj.customer) : obj.customer,
  )
  @ValidateNested()
  customer?: FilterNode | null;

  @ApiPropertyOptional({
    type: 'array',
    maxItems: MAX_EVENT_CONDITIONS,
    items: {
      type: 'object',
      required: ['type', 'within_days'],
      properties: {
        type: { type: 'string' },
        action: { type: 'string' },
        within_days: { type: 'integer', minimum: 1, maximum: MAX_WITHIN_DAYS },
        min_count: { type: 'integer', minimum: 0 },
        max_count: { type: 'integer', minimum: 0 },
        min_total: { type: 'number', description: "the sum of the events' order totals, at least" },
        max_total: { type: 'number', description: "the sum of the events' order totals, at most" },
      },
    },
  })
  @ValidateIf((d: SegmentDefinitionDto) => present(d.events))
  @Obeys('isEventConditions', (v) => {
    if (!Array.isArray(v) || v.length > MAX_EVENT_CONDITIONS)
      return `must be an array of at most ${MAX_EVENT_CONDITIONS} conditions`;
    for (const [i, c] of v.entries()) {
      const problem = conditionProblem(c);
      if (problem) return `[${i}] ${problem}`;
    }
    return undefined;
  })
  events?: EventCondition[] | null;

  /** Never sent: a definition names at least one condition. */
  @Obeys(
    'hasCondition',
    (_, d) =>
      present(d.customer) || (Array.isArray(d.events) && d.events.length > 0)
        ? undefined
        : 'needs a customer filter or at least one event condition',
    { context: { whole: true } },
  )
  readonly someCondition?: never;
}

/** `PUT /v3/segments/{id}`: the segment's name, description and definition. */
export class SegmentBodyDto {
  @ApiProperty({ type: 'string', maxLength: MAX_TEXT })
  @Obeys('isName', (v) =>
    typeof v === 'string' && v.trim() !== '' && v.length <= MAX_TEXT
      ? undefined
      : `is required: a non-blank string of at most ${MAX_TEXT} characters`,
  )
  name!: string;

  @ApiPropertyOptional({ type: 'string', maxLength: MAX_TEXT })
  @ValidateIf((b: SegmentBodyDto) => present(b.description))
  @Obeys('isDescription', (v) =>
    typeof v === 'string' && v.length <= MAX_TEXT
      ? undefined
      : `must be a string of at most ${MAX_TEXT} characters`,
  )
  description?: string | null;

  @ApiProperty({ type: SegmentDefinitionDto })
  @Obeys('isDefinition', (v) => (isObject(v) ? undefined : 'is required: {customer?, events?}'))
  @Type(() => SegmentDefinitionDto)
  @ValidateNested()
  definition!: SegmentDefinitionDto;
}

/** `POST /v3/segments`: the same with the segment's id. */
export class NewSegmentDto extends SegmentBodyDto {
  @ApiProperty({ type: 'string', pattern: SEGMENT_ID.source, maxLength: MAX_SEGMENT_ID_LENGTH })
  @Obeys('isSegmentId', (v) =>
    typeof v === 'string' && SEGMENT_ID.test(v) && v.length <= MAX_SEGMENT_ID_LENGTH
      ? undefined
      : `is required: [a-z][a-z0-9_]*, at most ${MAX_SEGMENT_ID_LENGTH} characters`,
  )
  id!: string;
}

const READ_DEPTH = 2 * (MAX_FILTER_DEPTH + 1) + 12;
/** Problems named by their path, `definition.customer.and[0].operator`, as the export API names them. */
const SegmentValidation = new EnvelopeValidationPipe({ indexes: 'brackets', maxDepth: READ_DEPTH + 1 });

function toFilter(f: RequestFilter): Filter {
  if ('and' in f) return { and: f.and.map(toFilter) };
  if ('or' in f) return { or: f.or.map(toFilter) };
  if ('not' in f) return { not: toFilter(f.not) };
  return { field: f.field, operator: operatorOf(f.operator)!, value: f.value };
}

function toCondition(c: EventCondition): EventCondition {
  return {
    type: c.type,
    ...(present(c.action) ? { action: c.action } : {}),
    within_days: c.within_days,
    ...(present(c.min_count) ? { min_count: c.min_count } : {}),
    ...(present(c.max_count) ? { max_count: c.max_count } : {}),
    ...(present(c.min_total) ? { min_total: c.min_total } : {}),
    ...(present(c.max_total) ? { max_total: c.max_total } : {}),
  };
}

/** A segment body checked by its DTO, then read as the service stores it (operators in the spec's spelling). */
export class SegmentBodyPipe implements PipeTransform<unknown, Promise<SegmentInput & { id?: string }>> {
  constructor(private readonly withId: boolean) {}

  async transform(value: unknown, metadata: ArgumentMetadata): Promise<SegmentInput & { id?: string }> {
    if (!isObject(value)) throw ApiError.badRequest('the body must be a JSON object');
    const body = pruned(value, READ_DEPTH) as Record<string, unknown>;
    await SegmentValidation.transform(body, {
      ...metadata,
      metatype: this.withId ? NewSegmentDto : SegmentBodyDto,
    });
    const definition = body.definition as {
      customer?: RequestFilter | null;
      events?: EventCondition[] | null;
    };
    return {
      ...(this.withId ? { id: body.id as string } : {}),
      name: (body.name as string).trim(),
      ...(typeof body.description === 'string' ? { description: body.description } : {}),
      definition: {
        ...(present(definition.customer) ? { customer: toFilter(definition.customer) } : {}),
        ...(present(definition.events) ? { events: definition.events.map(toCondition) } : {}),
      },
    };
  }
}
