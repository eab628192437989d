import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';

const ONE_IDENTIFIER = 'must be one string of at most 1024 characters';
export const MAX_LIMIT = 100;
export const DEFAULT_LIMIT = 10;
/** Products a page may name (a product page, a cart). */
export const MAX_CONTEXT_PRODUCTS = 100;

/**
 * `GET /v3/recommendations/products` (spec "Recommendations"). The customer is named by `vuid`,
 * `customer_id`, `email` or any `svc_alias_<name>` (read from the query by the identifier rules, not
 * declared here); an unknown customer is not an error. `sort` is checked against the account's product
 * fields by the controller, which knows them.
 */
export class RecommendationsQueryDto {
  @ApiPropertyOptional({ description: 'tag-based customer id' })
  @IsOptional()
  @IsString({ message: ONE_IDENTIFIER })
  @MaxLength(1024, { message: ONE_IDENTIFIER })
  vuid?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString({ message: ONE_IDENTIFIER })
  @MaxLength(1024, { message: ONE_IDENTIFIER })
  customer_id?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString({ message: ONE_IDENTIFIER })
  @MaxLength(1024, { message: ONE_IDENTIFIER })
  email?: string;

  @ApiPropertyOptional({ description: 'a product field (base or custom); default: the recommendation rank' })
  @IsOptional()
  @IsString({ message: 'must be one product field' })
  sort?: string;

  @ApiPropertyOptional({ enum: ['asc', 'desc'], description: 'default desc by rank, asc by a field' })
  @IsOptional()
  @IsIn(['asc', 'desc'], { message: 'must be asc or desc' })
  order?: 'asc' | 'desc';

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT })
  @IsOptional()
  @IsString({ message: `must be a whole number from 1 to ${MAX_LIMIT}` })
  @Matches(/^(100|[1-9][0-9]?)$/, { message: `must be a whole number from 1 to ${MAX_LIMIT}` })
  limit?: string;

  @ApiPropertyOptional({
    description: `comma-separated product ids the page shows (at most ${MAX_CONTEXT_PRODUCTS}): related products are recommended first, these never`,
  })
  @IsOptional()
  @IsString({ message: 'must be one comma-separated string of product ids' })
  @MaxLength(100 * 1025, { message: 'is too long' })
  product_ids?: string;
}
