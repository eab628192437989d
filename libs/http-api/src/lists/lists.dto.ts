import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';

/**
 * `POST /v3/lists` and `PUT /v3/lists/:list_id`. The naming rules (not blank, a letter or a digit to
 * derive the id from, unique per account ignoring case) stay in ListsService, which also needs the
 * account's other lists to apply them.
 */
export class ListNameDto {
  @ApiProperty({
    description: 'unique per account, ignoring case; the list id is derived from it',
    maxLength: 1024,
  })
  @IsString({ message: 'is required and must be a string' })
  name!: string;
}

const ONE_IDENTIFIER = 'must be one string of at most 1024 characters';
const LIST_IDS = 'must be one comma-separated string of list ids';

/**
 * `GET /v3/lists/subscriptions`: who (email or customer_id; which one is required is
 * SubscriptionLookup's rule, as it also answers a vuid) and which lists to show.
 */
export class SubscriptionsQueryDto {
  @ApiPropertyOptional()
  @IsOptional()
  @IsString({ message: ONE_IDENTIFIER })
  @MaxLength(1024, { message: ONE_IDENTIFIER })
  email?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString({ message: ONE_IDENTIFIER })
  @MaxLength(1024, { message: ONE_IDENTIFIER })
  customer_id?: string;

  @ApiPropertyOptional({ description: 'comma-separated list ids to keep' })
  @IsOptional()
  @IsString({ message: LIST_IDS })
  include?: string;

  @ApiPropertyOptional({ description: 'comma-separated list ids to drop' })
  @IsOptional()
  @IsString({ message: LIST_IDS })
  exclude?: string;
}
