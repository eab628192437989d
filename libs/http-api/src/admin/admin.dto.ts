import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Length, Matches, ValidateBy, ValidateIf } from 'class-validator';
import { MAX_RATE, RATE_LIMIT_FAMILIES, RATE_REASON, isRateSetting } from '@cdp/rate-limits';
import { EnvelopeValidationPipe } from '../validation/envelope-validation.pipe.js';
import { IsPageSize, Obeys } from '../validation/constraints.js';

const SHORT_TEXT = 'must be a non-empty string of at most 1024 characters';

/** `POST /admin/v1/accounts`: both fields optional. */
export class CreateAccountDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 1024 })
  @IsOptional()
  @IsString({ message: SHORT_TEXT })
  @Length(1, 1024, { message: SHORT_TEXT })
  name?: string;

  @ApiPropertyOptional({ description: 'defaults to a random id', minLength: 1, maxLength: 1024 })
  @IsOptional()
  @IsString({ message: SHORT_TEXT })
  @Length(1, 1024, { message: SHORT_TEXT })
  tracker_id?: string;
}

export const MAX_DEAD_LETTER_PAGE = 1000;

/** `GET /admin/v1/dead-letters`. */
export class DeadLettersQueryDto {
  @ApiPropertyOptional({ description: 'only this account' })
  @IsOptional()
  @IsString({ message: 'must be one account id' })
  account?: string;

  @ApiPropertyOptional({ description: 'the `next` of the previous page' })
  @IsOptional()
  @Matches(/^\d+$/, { message: 'must be the `next` of a previous page' })
  after?: string;

  @ApiPropertyOptional({
    description: `page size, 1–${MAX_DEAD_LETTER_PAGE} (default 100)`,
    type: 'integer',
    minimum: 1,
    maximum: MAX_DEAD_LETTER_PAGE,
  })
  @IsOptional()
  @IsPageSize(MAX_DEAD_LETTER_PAGE)
  limit?: string;
}

/** `POST /admin/v1/dead-letters/replay`. */
export class ReplayAccountQueryDto {
  @ApiProperty({ description: 'the account whose dead letters are replayed' })
  @IsString({ message: 'is required' })
  @Length(1, undefined, { message: 'is required' })
  account!: string;
}

const RATE_SETTING = {
  description:
    'requests per second, "unlimited", "no_access" (the family answers 403), or null for the default',
  nullable: true,
  oneOf: [
    { type: 'integer', minimum: 1, maximum: MAX_RATE },
    { type: 'string', enum: ['unlimited', 'no_access'] },
  ],
};

/**
 * `PATCH /admin/v1/accounts/:id/rate-limits`: family → rate. One property per API family, made from
 * RATE_LIMIT_FAMILIES so that a new family is checked and documented without touching this class.
 * Its OpenAPI schema is `rateLimitsPatchSchema`: @nestjs/swagger cannot describe a property declared
 * at run time with a `oneOf` (it looks for the property's TypeScript type).
 */
export class RateLimitsPatchDto {}

const NAMES_A_FAMILY = '(names a family)';

for (const family of RATE_LIMIT_FAMILIES) {
  ValidateBy({ name: 'isRate', validator: { validate: isRateSetting } }, { message: RATE_REASON })(
    RateLimitsPatchDto.prototype,
    family,
  );
  // Absent families keep their rate; null is checked (and accepted) as a setting.
  ValidateIf((body: Record<string, unknown>) => body[family] !== undefined)(
    RateLimitsPatchDto.prototype,
    family,
  );
}

// A body naming no family changes nothing: refused as a whole (a member never sent carries the rule).
Obeys(
  'namesAFamily',
  (value, body) => (value === undefined && Object.keys(body).length > 0 ? undefined : 'names no API family'),
  {
    context: { field: 'body' },
  },
)(RateLimitsPatchDto.prototype, NAMES_A_FAMILY);

export const rateLimitsPatchSchema = {
  type: 'object',
  properties: Object.fromEntries(RATE_LIMIT_FAMILIES.map((family) => [family, RATE_SETTING])),
  additionalProperties: false,
};

/** Unknown families are refused in the same answer as bad rates. */
export const RateLimitsValidation = new EnvelopeValidationPipe({
  unknownFieldReason: `is not an API family (${RATE_LIMIT_FAMILIES.join(', ')})`,
});
