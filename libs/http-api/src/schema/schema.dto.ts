import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { CUSTOM_FIELD_TYPES } from '@cdp/domain';
import { MAX_DESCRIPTION_LENGTH, MAX_DISPLAY_NAME_LENGTH, MAX_NAME_LENGTH } from '@cdp/schema';

/*
 * The bodies of the schema API, described for the OpenAPI document. They are checked by libs/schema
 * (schema.validation.ts), not by class-validator: every rule there but the shape needs the account's
 * current schema (names, aliases and display names already used, the child object of a relation and
 * its fields), and the naming rules live there once, so the DTOs only describe.
 */

const SNAKE_CASE = '^[a-z][a-z0-9]*(_[a-z0-9]+)*$';
const snakeName = { pattern: SNAKE_CASE, maxLength: MAX_NAME_LENGTH };
const displayName = { minLength: 1, maxLength: MAX_DISPLAY_NAME_LENGTH };

export class FieldDefDto {
  @ApiProperty(snakeName)
  name!: string;

  @ApiProperty({ enum: [...CUSTOM_FIELD_TYPES] })
  type!: string;

  @ApiProperty(displayName)
  display_name!: string;

  @ApiPropertyOptional({ maxLength: MAX_DESCRIPTION_LENGTH })
  description?: string;

  @ApiPropertyOptional({ description: 'only when the object is created' })
  primary?: boolean;
}

/** `POST /v3/schema/objects/:object/fields` with several fields. */
export class NewFieldsDto {
  @ApiProperty({ type: [FieldDefDto], minItems: 1 })
  fields!: FieldDefDto[];
}

export class JoinFieldDto {
  @ApiProperty(snakeName)
  parent!: string;

  @ApiProperty(snakeName)
  child!: string;
}

export class RelationDefDto {
  @ApiProperty(snakeName)
  name!: string;

  @ApiProperty(displayName)
  display_name!: string;

  @ApiProperty(snakeName)
  child_object!: string;

  @ApiProperty({ type: [JoinFieldDto], minItems: 1 })
  join_fields!: JoinFieldDto[];
}

export class ObjectDefDto {
  @ApiProperty({ ...snakeName, description: 'plural' })
  name!: string;

  @ApiProperty(displayName)
  display_name!: string;

  @ApiPropertyOptional({ ...snakeName, description: 'singular' })
  alias?: string;

  @ApiProperty({ type: [FieldDefDto], minItems: 1 })
  fields!: FieldDefDto[];

  @ApiPropertyOptional({ type: [RelationDefDto] })
  relations?: RelationDefDto[];
}
