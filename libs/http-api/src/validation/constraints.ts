import { ValidateBy, type ValidationOptions } from 'class-validator';
import { MAX_STRING } from '@cdp/contracts';

/** Why a value is not a usable text field, or undefined when it is one. */
function textReason(value: unknown, required: boolean): string | undefined {
  if (value === undefined || value === null) return required ? 'is required' : undefined;
  if (typeof value !== 'string') return 'must be a string';
  if (value.trim().length === 0) return 'must not be empty';
  if (value.length > MAX_STRING) return `must be at most ${MAX_STRING} characters`;
  return undefined;
}

/**
 * A non-blank string of at most MAX_STRING characters; the reason names the first rule it breaks
 * (required, a string, not blank, not too long), as the spec's envelope gives one reason per field.
 */
export function IsText(
  options: { required?: boolean } = {},
  validation?: ValidationOptions,
): PropertyDecorator {
  const required = options.required ?? false;
  return ValidateBy(
    {
      name: 'isText',
      validator: {
        validate: (value) => textReason(value, required) === undefined,
        defaultMessage: (args) => textReason(args?.value, required) ?? 'is invalid',
      },
    },
    validation,
  );
}

/** A string that passes `test`; other values are left to the field's type rule. */
export function Satisfies(
  name: string,
  test: (value: string) => boolean,
  reason: string,
  validation?: ValidationOptions,
): PropertyDecorator {
  return ValidateBy(
    {
      name,
      validator: {
        validate: (value) => typeof value !== 'string' || test(value),
        defaultMessage: () => reason,
      },
    },
    validation,
  );
}

/**
 * At least one of `fields` is present (neither undefined nor null). Put on a property of its own that
 * clients never send: the invalid names all the fields, as the spec's envelope does.
 */
export function OneOfRequired(fields: readonly string[], reason: string): PropertyDecorator {
  return ValidateBy(
    {
      name: 'oneOfRequired',
      validator: {
        validate: (_value, args) => {
          const object = (args?.object ?? {}) as Record<string, unknown>;
          return fields.some((f) => object[f] !== undefined && object[f] !== null);
        },
        defaultMessage: () => reason,
      },
    },
    { context: { field: [...fields] } },
  );
}

/**
 * A rule written once as "why is this value not usable" (the schema API's naming rules, kept in
 * libs/schema): the value passes when `problem` finds none, and the reason is the problem found.
 */
export function Obeys(
  name: string,
  problem: (value: unknown, object: Record<string, unknown>) => string | undefined,
  validation?: ValidationOptions,
): PropertyDecorator {
  const of = (value: unknown, object: unknown) => problem(value, (object ?? {}) as Record<string, unknown>);
  return ValidateBy(
    {
      name,
      validator: {
        validate: (value, args) => of(value, args?.object) === undefined,
        defaultMessage: (args) => of(args?.value, args?.object) ?? 'is invalid',
      },
    },
    validation,
  );
}

/**
 * A page size as a query carries it: the text of a whole number from 1 to `max` (absent: the route's
 * default; put `@IsOptional()` above it).
 */
export function IsPageSize(max: number): PropertyDecorator {
  return ValidateBy({
    name: 'isPageSize',
    validator: {
      validate: (value) => {
        if (typeof value !== 'string' || !/^\d+$/.test(value)) return false;
        const size = Number(value);
        return size >= 1 && size <= max;
      },
      defaultMessage: () => `must be a whole number from 1 to ${max}`,
    },
  });
}
