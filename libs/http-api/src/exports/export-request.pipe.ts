import type { ArgumentMetadata, PipeTransform } from '@nestjs/common';
import { ApiError } from '@cdp/contracts';
import { exportDetailOf, MAX_FILTER_DEPTH, type ExportDetail, type ExportRequest } from '@cdp/exports';
import { EnvelopeValidationPipe } from '../validation/envelope-validation.pipe.js';
import { ExportRequestDto } from './export-request.dto.js';

/**
 * Deeper than the deepest filter the DTOs still read (a node past MAX_FILTER_DEPTH is refused as a
 * whole, two levels per filter: the node and its and/or list), with room for a comparison's value.
 */
const READ_DEPTH = 2 * (MAX_FILTER_DEPTH + 1) + 8;

/** Invalids named as the export API always named them: `select.filter.and[0].operator`. */
const ExportValidation = new EnvelopeValidationPipe({ indexes: 'brackets', maxDepth: READ_DEPTH + 1 });

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A copy of `value` in which every object or list nested `max` levels deep is an empty object. No rule
 * reads that deep (a filter there is already refused for its depth; a value there is refused for not
 * being a string, number, boolean or null, which an empty object is not either), and class-transformer,
 * which copies a body recursively, never meets a hostile nesting that would overflow the stack.
 */
export function pruned(value: unknown, max: number): unknown {
  const shell = (v: object): object => (Array.isArray(v) ? [] : {});
  if (typeof value !== 'object' || value === null) return value;
  const root = shell(value);
  const stack: { from: object; to: object; depth: number }[] = [{ from: value, to: root, depth: 0 }];
  while (stack.length) {
    const { from, to, depth } = stack.pop()!;
    for (const [key, child] of Object.entries(from) as [string, unknown][]) {
      let copy: unknown = child;
      if (typeof child === 'object' && child !== null) {
        copy = depth + 1 >= max ? {} : shell(child);
        if (depth + 1 < max) stack.push({ from: child, to: copy as object, depth: depth + 1 });
      }
      // Defined, not assigned: a member named `__proto__` stays a member.
      Object.defineProperty(to, key, { value: copy, enumerable: true, writable: true, configurable: true });
    }
  }
  return root;
}

/**
 * `POST /v3/exports`: the body checked by ExportRequestDto through the envelope ValidationPipe, then
 * read as the export's detail (defaults, the spec's spelling of formats and operators).
 */
export class ExportRequestPipe implements PipeTransform<unknown, Promise<ExportDetail>> {
  async transform(value: unknown, metadata: ArgumentMetadata): Promise<ExportDetail> {
    if (!isObject(value)) throw ApiError.badRequest('the body must be a JSON object');
    const body = pruned(value, READ_DEPTH);
    await ExportValidation.transform(body, { ...metadata, metatype: ExportRequestDto });
    return exportDetailOf(body as ExportRequest);
  }
}

export const ExportRequestValidation = new ExportRequestPipe();
