import { ValidationPipe, type ArgumentMetadata } from '@nestjs/common';
import { validate, type ValidationError, type ValidatorOptions } from 'class-validator';
import { ApiError, type Invalid } from '@cdp/contracts';

/** What Nest's pipe says when the body is an array or a primitive where a DTO is expected. */
const NOT_AN_OBJECT = 'Validation failed (object is expected)';

/** The constraint class-validator reports for a property the DTO does not name (`forbidNonWhitelisted`). */
const UNKNOWN_PROPERTY = 'whitelistValidation';

/**
 * Deeper than any DTO goes. class-transformer copies a body recursively before class-validator sees
 * it, so a value nested thousands of levels deep would overflow the stack (a 500): it is refused first.
 */
export const MAX_DTO_DEPTH = 32;

/**
 * Context a DTO constraint may carry to name the field itself: several fields where one of them is
 * required (the spec's envelope lists them all, e.g. `['email', 'phone', 'vuid']`).
 */
export interface InvalidContext {
  field?: string | string[];
  /**
   * The rule is about the object that holds the property as a whole (a never-sent property carries
   * it): the invalid names that object's path (`select.filter.and[0]`), not the property's.
   */
  whole?: boolean;
}

/** How a path names an item of a list: `fields.0.name` (the default) or `select.sorts[0].field`. */
export type IndexStyle = 'dotted' | 'brackets';

const ONE_PROBLEM = Symbol('oneProblemAtATime');

/**
 * A class decorator: an object of this DTO is reported by its first failing property only (with all
 * that property holds), as a parser that stops at the first problem of each object answers.
 */
export function OneProblemAtATime(): ClassDecorator {
  return (target) => {
    Reflect.defineMetadata(ONE_PROBLEM, true, target);
  };
}

const reportsOneProblem = (target: object | undefined): boolean =>
  target !== undefined && Reflect.getMetadata(ONE_PROBLEM, target.constructor) === true;

/** The walker's settings: how unknown fields are named, how list items are. */
interface PathStyle {
  unknownFieldReason: string;
  indexes: IndexStyle;
}

function pathOf(parent: string, error: ValidationError, style: PathStyle): string {
  if (!parent) return error.property;
  if (style.indexes === 'brackets' && /^\d+$/.test(error.property)) return `${parent}[${error.property}]`;
  return `${parent}.${error.property}`;
}

/** The constraint of `@ValidateNested`: the property is not the object (or list of objects) it should be. */
const NESTED = 'nestedValidation';

/**
 * class-validator's errors as the spec's invalids: one per field, `field` the dotted path of the
 * property (`select.filter.field`, array items by index: `fields.0.name`), `reason` the message of the
 * first declared constraint that failed (declare the type rule above the finer ones). A property that
 * fails a rule of its own is reported alone, not with the rules of what it holds: `relations: {}` is
 * "must be array", not also every missing field of a relation.
 */
export function invalidsOf(
  errors: readonly ValidationError[],
  parent = '',
  unknownFieldReason = 'is not a known field',
  indexes: IndexStyle = 'dotted',
): Invalid[] {
  return walk(errors, parent, { unknownFieldReason, indexes });
}

function walk(errors: readonly ValidationError[], parent: string, style: PathStyle): Invalid[] {
  const reported = errors.length && reportsOneProblem(errors[0]!.target) ? errors.slice(0, 1) : errors;
  return reported.flatMap((error) => {
    const path = pathOf(parent, error, style);
    // class-validator lists a property's failed constraints from the last declared to the first, and
    // `@ValidateNested`'s after them all: it is reported only when no other rule failed.
    const failed = Object.entries(error.constraints ?? {});
    const own = (
      failed.some(([name]) => name !== NESTED) ? failed.filter(([name]) => name !== NESTED) : failed
    ).slice(-1);
    const invalids: Invalid[] = own.map(([name, message]) => {
      const context = error.contexts?.[name] as InvalidContext | undefined;
      return {
        field: context?.whole ? parent || 'body' : (context?.field ?? path),
        reason: reasonOf(name, message, error.value, style.unknownFieldReason),
      };
    });
    if (own.length && own[0]![0] !== NESTED) return invalids;
    return [...invalids, ...walk(error.children ?? [], path, style)];
  });
}

function reasonOf(constraint: string, message: string, value: unknown, unknownFieldReason: string): string {
  if (constraint === UNKNOWN_PROPERTY) return unknownFieldReason;
  if (constraint === NESTED) return Array.isArray(value) ? 'must list objects' : 'must be an object';
  return message === NOT_AN_OBJECT ? 'must be an object' : message;
}

/** The top-level property (`body` for an array) under which `value` nests deeper than `max`, if any. */
export function tooDeep(value: unknown, max = MAX_DTO_DEPTH): string | undefined {
  const stack: { at: unknown; depth: number; top: string }[] = [{ at: value, depth: 0, top: 'body' }];
  while (stack.length) {
    const { at, depth, top } = stack.pop()!;
    if (typeof at !== 'object' || at === null) continue;
    if (depth >= max) return top;
    for (const [key, child] of Object.entries(at)) {
      stack.push({ at: child, depth: depth + 1, top: depth === 0 && !Array.isArray(at) ? key : top });
    }
  }
  return undefined;
}

export interface EnvelopeValidationOptions {
  /**
   * Refuse properties the DTO does not name, with this reason (default: they are ignored, as the
   * control plane always did; a client sending extra properties is not refused).
   */
  unknownFieldReason?: string;
  /** How paths name list items (default `dotted`: `fields.0.name`). */
  indexes?: IndexStyle;
  /** Deeper than this a body is refused before class-transformer copies it (default MAX_DTO_DEPTH). */
  maxDepth?: number;
}

/**
 * The ValidationPipe of the control-plane controllers: DTO classes with class-validator decorators,
 * every problem answered at once in the spec's envelope. The pipe hands the route the body as it came
 * (no `transform`, and no other validator option, which would make Nest hand back a copy), so
 * services keep reading plain JSON; with `unknownFieldReason` it hands back the copy without them.
 */
export class EnvelopeValidationPipe extends ValidationPipe {
  constructor(options: EnvelopeValidationOptions = {}) {
    const { unknownFieldReason, indexes, maxDepth = MAX_DTO_DEPTH } = options;
    super({
      ...(unknownFieldReason ? { whitelist: true, forbidNonWhitelisted: true } : {}),
      exceptionFactory: (errors) => ApiError.invalid(invalidsOf(errors, '', unknownFieldReason, indexes)),
    });
    this.maxDepth = maxDepth;
  }

  private readonly maxDepth: number;

  /**
   * The walker reads each error's object (is it one that reports one problem at a time?), which Nest
   * leaves out by default; the errors are never sent, so holding it costs nothing. (Passed here, not as
   * a validator option, which would make Nest hand back a copy of the body.)
   */
  protected override validate(
    object: object,
    options?: ValidatorOptions,
  ): Promise<ValidationError[]> | ValidationError[] {
    return super.validate(object, {
      ...options,
      validationError: { ...options?.validationError, target: true },
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.metatype && this.toValidate(metadata)) {
      const field = tooDeep(value, this.maxDepth);
      if (field) {
        throw ApiError.invalid([{ field, reason: `must not nest deeper than ${this.maxDepth} levels` }]);
      }
      // A list or a plain value where the DTO's object is expected is one problem, not one per property.
      if (value !== undefined && value !== null && (typeof value !== 'object' || Array.isArray(value)))
        throw ApiError.invalid([
          { field: metadata.type === 'body' ? 'body' : metadata.type, reason: 'must be an object' },
        ]);
    }
    return super.transform(value, metadata);
  }
}

/**
 * The invalids of one object checked by a DTO whose rules all look at its own members (no nested DTO),
 * in the envelope's terms. The members are checked in place, not through class-transformer's deep copy,
 * so a further member nested however deep is only ever read as far as a rule reads it. For the parts of
 * a body that is a union of such DTOs (`POST /v3/lists/subscriptions`).
 */
export async function memberInvalids(
  value: Record<string, unknown>,
  metatype: new () => object,
): Promise<Invalid[]> {
  const instance = new metatype();
  // Defined, not assigned: a member named `__proto__` stays a member and never replaces the prototype.
  // A member named `constructor` is left out: class-validator finds the DTO's rules by the object's
  // constructor, and no DTO has a member of that name.
  for (const [key, member] of Object.entries(value)) {
    if (key === 'constructor') continue;
    Object.defineProperty(instance, key, {
      value: member,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return invalidsOf(await validate(instance));
}

/** One instance is enough for the controllers that ignore unknown fields: it holds no request state. */
export const EnvelopeValidation = new EnvelopeValidationPipe();
