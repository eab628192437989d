import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { ArgumentMetadata } from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsIn, IsString, MaxLength, ValidateNested } from 'class-validator';
import { ApiError, type Invalid } from '@cdp/contracts';
import { DeadLettersQueryDto, RateLimitsPatchDto, RateLimitsValidation } from '../admin/admin.dto.js';
import { OptOutDto } from '../optout/optout.dto.js';
import { Obeys } from './constraints.js';
import { EnvelopeValidation, EnvelopeValidationPipe, OneProblemAtATime } from './envelope-validation.pipe.js';

class ComparisonDto {
  @IsString({ message: 'must be a field name' })
  field!: string;

  @IsIn(['eq', 'ne'], { message: 'must be eq or ne' })
  operator!: string;
}

class SelectDto {
  @IsString({ message: 'must be an object name' })
  @MaxLength(3, { message: 'must be at most 3 characters' })
  object!: string;

  @ValidateNested()
  @Type(() => ComparisonDto)
  filter!: ComparisonDto;

  @ValidateNested({ each: true })
  @Type(() => ComparisonDto)
  sorts!: ComparisonDto[];
}

class ExportDto {
  @ValidateNested()
  @Type(() => SelectDto)
  select!: SelectDto;
}

const body = (metatype: ArgumentMetadata['metatype']): ArgumentMetadata => ({ type: 'body', metatype });

/** The invalids the pipe answers with, or undefined when the value passes. */
async function invalidsOf(
  value: unknown,
  metadata: ArgumentMetadata,
  pipe: EnvelopeValidationPipe = EnvelopeValidation,
): Promise<Invalid[] | undefined> {
  try {
    await pipe.transform(value, metadata);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    const envelope = (err as ApiError).envelope();
    expect(envelope).toMatchObject({ title: 'Bad Request', status: 400 });
    expect(Number.isNaN(Date.parse(envelope.timestamp))).toBe(false);
    return 'invalids' in envelope.detail ? envelope.detail.invalids : [];
  }
}

describe('the envelope ValidationPipe', () => {
  it('names nested fields by their dotted path, array items by index', async () => {
    const invalids = await invalidsOf(
      {
        select: {
          object: 7,
          filter: { field: 1, operator: 'eq' },
          sorts: [
            { field: 'a', operator: 'eq' },
            { field: 'b', operator: 'gt' },
          ],
        },
      },
      body(ExportDto),
    );
    expect(invalids).toEqual([
      { field: 'select.object', reason: 'must be an object name' },
      { field: 'select.filter.field', reason: 'must be a field name' },
      { field: 'select.sorts.1.operator', reason: 'must be eq or ne' },
    ]);
  });

  it('gives one reason per field: the first declared rule that failed', async () => {
    // 7 is neither a string nor short enough to measure: the type rule is the one reported.
    expect(await invalidsOf({ select: { object: 7 } }, body(ExportDto))).toContainEqual({
      field: 'select.object',
      reason: 'must be an object name',
    });
    expect(
      await invalidsOf(
        { select: { object: 'abcd', filter: { field: 'a', operator: 'eq' }, sorts: [] } },
        body(ExportDto),
      ),
    ).toEqual([{ field: 'select.object', reason: 'must be at most 3 characters' }]);
  });

  it('refuses an array or a primitive where an object is expected, as the body', async () => {
    expect(await invalidsOf([{ select: {} }], body(ExportDto))).toEqual([
      { field: 'body', reason: 'must be an object' },
    ]);
  });

  it('returns the body as it came when it is valid, extra fields included', async () => {
    const value = { requester: 'dpo', email: 'a@example.com', extra: 1 };
    await expect(EnvelopeValidation.transform(value, body(OptOutDto))).resolves.toBe(value);
  });

  it('lets a constraint name several fields at once (one of them is required)', async () => {
    expect(await invalidsOf({}, body(OptOutDto))).toEqual([
      { field: 'requester', reason: 'is required' },
      { field: ['email', 'phone', 'vuid'], reason: 'one of email, phone or vuid is required' },
    ]);
    expect(await invalidsOf({ requester: ' ', email: 5, vuid: 'undefined' }, body(OptOutDto))).toEqual([
      { field: 'requester', reason: 'must not be empty' },
      { field: 'email', reason: 'must be a string' },
      { field: 'vuid', reason: 'must be a cookie id' },
    ]);
  });

  it('validates queries the same way (strings as the query parser gives them)', async () => {
    const query = (metatype: ArgumentMetadata['metatype']): ArgumentMetadata => ({ type: 'query', metatype });
    expect(await invalidsOf({ limit: '1000', after: '12' }, query(DeadLettersQueryDto))).toBeUndefined();
    expect(
      await invalidsOf({ limit: '1001', after: 'x', account: ['a', 'b'] }, query(DeadLettersQueryDto)),
    ).toEqual([
      { field: 'account', reason: 'must be one account id' },
      { field: 'after', reason: 'must be the `next` of a previous page' },
      { field: 'limit', reason: 'must be a whole number from 1 to 1000' },
    ]);
  });
});

describe('bodies nested deeper than any DTO', () => {
  it('are refused on the top-level field that holds them, before class-transformer copies them', async () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(await invalidsOf({ requester: 'dpo', phone: deep }, body(OptOutDto))).toEqual([
      { field: 'phone', reason: 'must not nest deeper than 32 levels' },
    ]);
    expect(await invalidsOf(deep, body(OptOutDto))).toEqual([
      { field: 'body', reason: 'must not nest deeper than 32 levels' },
    ]);
  });
});

describe('a pipe that refuses unknown fields (rate limits)', () => {
  it('names each unknown field with its reason, in the same answer as the bad values', async () => {
    const invalids = await invalidsOf(
      { profiles: 0, nonsense: 5, events: 1.5, lists: null, exports: 'unlimited' },
      body(RateLimitsPatchDto),
      RateLimitsValidation,
    );
    expect(invalids).toEqual(
      expect.arrayContaining([
        { field: 'profiles', reason: expect.stringMatching(/^must be a whole number/) },
        { field: 'events', reason: expect.stringMatching(/^must be a whole number/) },
        { field: 'nonsense', reason: expect.stringMatching(/^is not an API family \(profiles, /) },
      ]),
    );
    expect(invalids).toHaveLength(3);
  });
});

@OneProblemAtATime()
class StepDto {
  /** Never sent: a rule on the step as a whole. */
  @Obeys('isStep', (_, step) => (step.skip === true ? 'is skipped' : undefined), { context: { whole: true } })
  readonly whole?: never;

  @IsString({ message: 'must be a name' })
  name!: string;

  @IsIn(['up', 'down'], { message: 'must be up or down' })
  way!: string;
}

class PlanDto {
  @ValidateNested({ each: true })
  @Type(() => StepDto)
  steps!: StepDto[];
}

describe('the envelope pipe for a grammar (brackets, one problem per object, rules on a whole object)', () => {
  const Brackets = new EnvelopeValidationPipe({ indexes: 'brackets' });

  it('names list items by [index] and reports each marked object by its first failing property', async () => {
    expect(
      await invalidsOf(
        { steps: [{ name: 'a', way: 'up' }, { name: 1, way: 'sideways' }, { way: 'sideways' }] },
        body(PlanDto),
        Brackets,
      ),
    ).toEqual([
      { field: 'steps[1].name', reason: 'must be a name' },
      { field: 'steps[2].name', reason: 'must be a name' },
    ]);
  });

  it('names the object itself for a rule on it as a whole', async () => {
    expect(await invalidsOf({ steps: [{ skip: true, name: 1 }] }, body(PlanDto), Brackets)).toEqual([
      { field: 'steps[0]', reason: 'is skipped' },
    ]);
  });

  it('takes a deeper bound where a grammar nests deeper than 32 levels', async () => {
    const Deep = new EnvelopeValidationPipe({ maxDepth: 40 });
    let deep: unknown = 'x';
    for (let i = 0; i < 35; i++) deep = [deep];
    expect(await invalidsOf({ requester: 'dpo', email: 'a@b.co', extra: deep }, body(OptOutDto), Deep)).toBe(
      undefined,
    );
    expect(await invalidsOf({ requester: 'dpo', email: 'a@b.co', extra: deep }, body(OptOutDto))).toEqual([
      { field: 'extra', reason: 'must not nest deeper than 32 levels' },
    ]);
  });
});
