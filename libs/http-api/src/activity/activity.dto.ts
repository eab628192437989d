import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Matches } from 'class-validator';
import { IsPageSize } from '../validation/constraints.js';

export const MAX_ACTIVITY_PAGE = 100;
export const DEFAULT_ACTIVITY_PAGE = 20;

/** `GET /v3/activity`. */
export class ActivityQueryDto {
  @ApiPropertyOptional({
    description: `1 to ${MAX_ACTIVITY_PAGE} entries, ${DEFAULT_ACTIVITY_PAGE} by default`,
    type: 'integer',
    minimum: 1,
    maximum: MAX_ACTIVITY_PAGE,
  })
  @IsOptional()
  @IsPageSize(MAX_ACTIVITY_PAGE)
  limit?: string;

  @ApiPropertyOptional({ description: "the previous page's `next`" })
  @IsOptional()
  @Matches(/^[A-Za-z0-9_-]{1,200}$/, { message: "must be a previous page's next" })
  cursor?: string;
}
