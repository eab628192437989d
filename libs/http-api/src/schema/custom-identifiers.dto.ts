import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsOptional, ValidateBy } from 'class-validator';
import {
  CUSTOM_IDENTIFIER_DISPLAY_SUFFIXES,
  CUSTOM_IDENTIFIER_SUFFIXES,
  customIdentifierDisplayNameProblem,
  customIdentifierNameProblem,
  MERGE_CONFIDENCES,
} from '@cdp/domain';
import { MAX_DISPLAY_NAME_LENGTH, MAX_NAME_LENGTH, snakeCaseProblem } from '@cdp/schema';
import { IsText } from '../validation/constraints.js';

/** A rule whose reason depends on the value: the first problem `problem` finds, or none. */
function Rule(name: string, problem: (value: string) => string | undefined): PropertyDecorator {
  return ValidateBy({
    name,
    validator: {
      validate: (value) => typeof value !== 'string' || problem(value) === undefined,
      defaultMessage: (args) =>
        (typeof args?.value === 'string' ? problem(args.value) : undefined) ?? 'is invalid',
    },
  });
}

/**
 * `POST /v3/schema/identifiers`, as the original API's clients send it. The rules of the name and the
 * display name that need no account are here; whether they are free on customers and events is the
 * registry's rule (SchemaRegistry.createIdentifier), which reads the account's schema.
 */
export class CustomIdentifierDto {
  @ApiProperty({
    pattern: `^[a-z][a-z0-9]*(_[a-z0-9]+)*(${CUSTOM_IDENTIFIER_SUFFIXES.join('|')})$`,
    maxLength: MAX_NAME_LENGTH,
    description: `lower snake case ending with ${CUSTOM_IDENTIFIER_SUFFIXES.join(', ')}`,
  })
  @IsText({ required: true })
  @Rule('isSnakeCase', (v) => snakeCaseProblem(v))
  @Rule('isIdentifierName', customIdentifierNameProblem)
  name!: string;

  @ApiProperty({
    pattern: `^\\s*\\S.* (${CUSTOM_IDENTIFIER_DISPLAY_SUFFIXES.map((s) => s.slice(1)).join('|')})\\s*$`,
    maxLength: MAX_DISPLAY_NAME_LENGTH,
    description: `ending with ${CUSTOM_IDENTIFIER_DISPLAY_SUFFIXES.map((s) => `"${s}"`).join(', ')}`,
  })
  @IsText({ required: true })
  @Rule('isIdentifierDisplayName', customIdentifierDisplayNameProblem)
  display_name!: string;

  @ApiProperty({ enum: [...MERGE_CONFIDENCES] })
  @IsIn([...MERGE_CONFIDENCES], { message: `must be one of ${MERGE_CONFIDENCES.join(', ')}` })
  merge_confidence!: 'low' | 'high';

  @ApiPropertyOptional({ default: false })
  @IsOptional()
  @IsBoolean({ message: 'must be true or false' })
  messaging?: boolean;
}
