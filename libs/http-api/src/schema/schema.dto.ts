import type { ArgumentMetadata, PipeTransform } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsArray, IsBoolean, IsOptional, IsString, ValidateIf, ValidateNested } from 'class-validator';
import { CUSTOM_FIELD_TYPES, isCustomFieldType, type CustomFieldType } from '@cdp/domain';
import {
  MAX_DESCRIPTION_LENGTH,
  MAX_DISPLAY_NAME_LENGTH,
  MAX_NAME_LENGTH,
  aliasProblem,
  displayNameProblem,
  isPrimary,
  objectNameProblem,
  snakeCaseProblem,
  type NewField,
  type NewFields,
  type NewJoinField,
  type NewObject,
  type NewRelation,
} from '@cdp/schema';
import { Obeys } from '../validation/constraints.js';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';

/*
 * The bodies of the schema API: their shape and naming rules, checked by the envelope ValidationPipe
 * before the route runs. The rules that need the account's current schema (names, aliases and display
 * names already used, the child object of a relation and its fields) are libs/schema's
 * (schema.validation.ts), run by the registry against the schema the change is written on.
 */

const SNAKE_CASE = '^[a-z][a-z0-9]*(_[a-z0-9]+)*$';
const snakeName = { pattern: SNAKE_CASE, maxLength: MAX_NAME_LENGTH };
const displayName = { minLength: 1, maxLength: MAX_DISPLAY_NAME_LENGTH };

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Absent, null and '' all mean "no alias", as they always did. */
const hasAlias = (o: { alias?: unknown }) => o.alias !== undefined && o.alias !== null && o.alias !== '';

const fieldTypeProblem = (type: unknown) =>
  isCustomFieldType(type) ? undefined : `must be one of ${CUSTOM_FIELD_TYPES.join(', ')}`;

const descriptionProblem = (value: unknown) =>
  typeof value === 'string' && [...value].length <= MAX_DESCRIPTION_LENGTH
    ? undefined
    : `must be a string of at most ${MAX_DESCRIPTION_LENGTH} characters`;

/** A list of fields none of which is the primary key (another rule refuses what is no list). */
const primaryKeyProblem = (fields: unknown) =>
  Array.isArray(fields) && fields.length && !fields.some((f) => isRecord(f) && isPrimary(f))
    ? 'at least one field must be the primary key (primary: true)'
    : undefined;

/** A list of at least one item, or `reason`. */
const nonEmptyList = (reason: string) => (value: unknown) =>
  Array.isArray(value) && value.length > 0 ? undefined : reason;

export class FieldDefDto implements NewField {
  @ApiProperty(snakeName)
  @Obeys('isFieldName', snakeCaseProblem)
  name!: string;

  @ApiProperty({ enum: [...CUSTOM_FIELD_TYPES] })
  @Obeys('isFieldType', fieldTypeProblem)
  type!: CustomFieldType;

  @ApiProperty(displayName)
  @Obeys('isDisplayName', displayNameProblem)
  display_name!: string;

  @ApiPropertyOptional({ maxLength: MAX_DESCRIPTION_LENGTH })
  @IsOptional()
  @Obeys('isDescription', descriptionProblem)
  description?: string;

  @ApiPropertyOptional({ description: 'only when the object is created' })
  @IsOptional()
  @IsBoolean({ message: 'must be boolean' })
  primary?: boolean;

  @ApiPropertyOptional({ description: 'another name for `primary`' })
  @IsOptional()
  @IsBoolean({ message: 'must be boolean' })
  primary_key?: boolean;
}

/** `POST /v3/schema/objects/:object/fields` with several fields. */
export class NewFieldsDto {
  @ApiProperty({ type: [FieldDefDto], minItems: 1 })
  @Obeys('isFieldList', nonEmptyList('must list at least one field'))
  @ValidateNested({ each: true })
  @Type(() => FieldDefDto)
  fields!: FieldDefDto[];
}

export class JoinFieldDto implements NewJoinField {
  @ApiPropertyOptional({
    ...snakeName,
    description: 'field of the object holding the relation; this or `source` is required',
  })
  @ValidateIf((pair: NewJoinField) => pair.source === undefined)
  @IsString({ message: 'must be a field name of the object' })
  parent?: string;

  @ApiPropertyOptional({
    ...snakeName,
    description: 'primary-key field of the child object; this or `target` is required',
  })
  @ValidateIf((pair: NewJoinField) => pair.target === undefined)
  @IsString({ message: 'must be a primary-key field name of the child object' })
  child?: string;

  @ApiPropertyOptional({ description: "another name for `parent` (the spec's parameter table)" })
  @IsOptional()
  @IsString({ message: 'must be a field name of the object' })
  source?: string;

  @ApiPropertyOptional({ description: 'another name for `child`' })
  @IsOptional()
  @IsString({ message: 'must be a primary-key field name of the child object' })
  target?: string;
}

export class RelationDefDto implements NewRelation {
  @ApiProperty(snakeName)
  @Obeys('isRelationName', snakeCaseProblem)
  name!: string;

  @ApiProperty(displayName)
  @Obeys('isDisplayName', displayNameProblem)
  display_name!: string;

  @ApiProperty(snakeName)
  @Obeys('isObjectName', (v) => (typeof v === 'string' && v !== '' ? undefined : 'is required'))
  child_object!: string;

  @ApiProperty({ type: [JoinFieldDto], minItems: 1 })
  @Obeys('isJoinList', nonEmptyList('must list at least one {parent, child} pair'))
  @ValidateNested({ each: true })
  @Type(() => JoinFieldDto)
  join_fields!: JoinFieldDto[];
}

export class ObjectDefDto implements NewObject {
  @ApiProperty({ ...snakeName, description: 'plural' })
  @Obeys('isObjectName', objectNameProblem)
  name!: string;

  @ApiProperty(displayName)
  @Obeys('isDisplayName', displayNameProblem)
  display_name!: string;

  @ApiPropertyOptional({ ...snakeName, description: 'singular' })
  @ValidateIf(hasAlias)
  @Obeys('isAlias', aliasProblem)
  alias?: string;

  @ApiProperty({ type: [FieldDefDto], minItems: 1 })
  @Obeys('isFieldList', nonEmptyList('must list the fields, at least one of them primary'))
  @ValidateNested({ each: true })
  @Type(() => FieldDefDto)
  fields!: FieldDefDto[];

  @ApiPropertyOptional({ type: [RelationDefDto] })
  @IsOptional()
  @IsArray({ message: 'must be array' })
  @ValidateNested({ each: true })
  @Type(() => RelationDefDto)
  relations?: RelationDefDto[];

  /** Never sent: the rule that one of the fields is the primary key, reported on `fields`. */
  @Obeys('hasPrimaryKey', (_, { fields }) => primaryKeyProblem(fields), { context: { field: 'fields' } })
  readonly primaryKey?: never;
}

/**
 * The body of `POST .../fields`, one field or `{fields: [...]}`: told apart by a `fields` property,
 * then checked as the DTO of that form, in the same envelope.
 */
export class NewFieldsPipe implements PipeTransform<unknown, Promise<NewFields>> {
  async transform(value: unknown, metadata: ArgumentMetadata): Promise<NewFields> {
    const metatype = isRecord(value) && 'fields' in value ? NewFieldsDto : FieldDefDto;
    return (await EnvelopeValidation.transform(value, { ...metadata, metatype })) as NewFields;
  }
}

export const NewFieldsValidation = new NewFieldsPipe();
