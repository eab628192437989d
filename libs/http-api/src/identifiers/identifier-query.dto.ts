import { ApiProperty } from '@nestjs/swagger';
import { IsString, MaxLength } from 'class-validator';

const ONE_VALUE = 'is required: one identifier value of at most 1024 characters';

/** `GET /v3/consent|reachability|identifiers/{identifier_field_name}?id=`: the identifier value. */
export class IdentifierQueryDto {
  @ApiProperty({ description: 'the identifier value, such as an email address', maxLength: 1024 })
  @IsString({ message: ONE_VALUE })
  @MaxLength(1024, { message: ONE_VALUE })
  id!: string;
}
