import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Length, Matches, ValidateBy } from 'class-validator';

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

/** A page size as the query carries it: the text of a whole number from 1 to MAX_DEAD_LETTER_PAGE. */
function isPageSize(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const size = Number(value);
  return Number.isInteger(size) && size >= 1 && size <= MAX_DEAD_LETTER_PAGE;
}

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
  @ValidateBy(
    { name: 'isPageSize', validator: { validate: isPageSize } },
    { message: `must be a whole number from 1 to ${MAX_DEAD_LETTER_PAGE}` },
  )
  limit?: string;
}

/** `POST /admin/v1/dead-letters/replay`. */
export class ReplayAccountQueryDto {
  @ApiProperty({ description: 'the account whose dead letters are replayed' })
  @IsString({ message: 'is required' })
  @Length(1, undefined, { message: 'is required' })
  account!: string;
}
