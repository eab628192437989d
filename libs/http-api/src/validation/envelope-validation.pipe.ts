import { ValidationPipe } from '@nestjs/common';
import type { ValidationError } from 'class-validator';
import { ApiError, type Invalid } from '@cdp/contracts';

/** What Nest's pipe says when the body is an array or a primitive where a DTO is expected. */
const NOT_AN_OBJECT = 'Validation failed (object is expected)';

/**
 * Context a DTO constraint may carry to name the field itself: several fields where one of them is
 * required (the spec's envelope lists them all, e.g. `['email', 'phone', 'vuid']`).
 */
export interface InvalidContext {
  field?: string | string[];
}

/**
 * class-validator's errors as the spec's invalids: one per field, `field` the dotted path of the
 * property (`select.filter.field`, array items by index: `fields.0.name`), `reason` the message of the
 * first declared constraint that failed (declare the type rule above the finer ones).
 */
export function invalidsOf(errors: readonly ValidationError[], parent = ''): Invalid[] {
  return errors.flatMap((error) => {
    const path = parent ? `${parent}.${error.property}` : error.property;
    // class-validator lists a property's failed constraints from the last declared to the first.
    const own = Object.entries(error.constraints ?? {}).slice(-1);
    const invalids: Invalid[] = own.map(([name, message]) => {
      const context = error.contexts?.[name] as InvalidContext | undefined;
      return {
        field: context?.field ?? path,
        reason: message === NOT_AN_OBJECT ? 'must be an object' : message,
      };
    });
    return [...invalids, ...invalidsOf(error.children ?? [], path)];
  });
}

/**
 * The one ValidationPipe of the control-plane controllers: DTO classes with class-validator
 * decorators, every problem answered at once in the spec's envelope. Fields a DTO does not name are
 * ignored, as they always were (no `whitelist`): a client sending extra properties is not refused.
 * The pipe hands the route the body as it came (no `transform`, and no other validator option, which
 * would make Nest hand back a copy), so services keep reading plain JSON.
 */
export function envelopeValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    exceptionFactory: (errors) => ApiError.invalid(invalidsOf(errors)),
  });
}

/** One instance is enough: the pipe holds no state of a request. */
export const EnvelopeValidation = envelopeValidationPipe();
