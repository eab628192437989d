import { Ajv, type ErrorObject } from 'ajv';
import { BOOLEAN_REASON, readBoolean } from '@cdp/domain';
import { ApiError, type Invalid } from './errors.js';
import { BOOLEAN_KEYWORD, MAX_BATCH } from './schemas.js';

/**
 * Validates a batch body (one record or an array of at most 1000) with a schema compiled once, then a
 * per-record rule of the caller. Reports one invalid per problem with the record's index; any invalid
 * rejects the whole request, so nothing of it is stored.
 */
export class BatchValidator<In, Out, Ctx = void> {
  private readonly check: (value: unknown) => boolean;
  private readonly validate: ReturnType<Ajv['compile']>;

  constructor(
    schema: Record<string, unknown>,
    private readonly noun: string,
    /** Turns a schema-valid record into its normalized form, or returns its invalids. */
    private readonly rule: (record: In, index: number, context: Ctx) => Out | Invalid[],
  ) {
    // strictNumbers: JSON's 1e400 parses to Infinity, which `type: number` would otherwise let through.
    const ajv = new Ajv({ allErrors: true, strict: false, strictNumbers: true });
    ajv.addKeyword({
      keyword: BOOLEAN_KEYWORD,
      schemaType: 'boolean',
      error: { message: BOOLEAN_REASON },
      validate: (on: boolean, value: unknown) => !on || readBoolean(value) !== undefined,
    });
    this.validate = ajv.compile(schema);
    this.check = this.validate;
  }

  parse(body: unknown, context: Ctx): Out[] {
    const items = Array.isArray(body) ? body : [body];
    if (Array.isArray(body) && (body.length === 0 || body.length > MAX_BATCH)) {
      throw ApiError.invalid([
        {
          field: 'body',
          reason: `a batch holds 1 to ${MAX_BATCH} ${this.noun}s; this one holds ${body.length}`,
        },
      ]);
    }
    const invalids: Invalid[] = [];
    const out: Out[] = [];
    items.forEach((item, index) => {
      if (!this.check(item)) {
        // An `if` error only says a `then` failed; the failures of the `then` are reported themselves.
        const errors = (this.validate.errors ?? []).filter((e) => e.keyword !== 'if');
        invalids.push(...dedupe(errors.map((e) => toInvalid(e, index))));
        return;
      }
      const result = this.rule(item as In, index, context);
      if (Array.isArray(result)) invalids.push(...result);
      else out.push(result);
    });
    if (invalids.length) throw ApiError.invalid(invalids);
    return out;
  }
}

function toInvalid(error: ErrorObject, index: number): Invalid {
  const path = error.instancePath.split('/').filter(Boolean).join('.');
  if (error.keyword === 'required') {
    const missing = String((error.params as { missingProperty: string }).missingProperty);
    return { event: index, field: path ? `${path}.${missing}` : missing, reason: 'is required' };
  }
  return { event: index, field: path || 'body', reason: error.message ?? 'is invalid' };
}

/**
 * anyOf produces one error per branch; one invalid per field is what a sender can act on. A nullable
 * object whose content is wrong also fails its null branch at its own path: when a deeper field is
 * reported, its ancestors' errors say nothing more and are left out.
 */
function dedupe(invalids: Invalid[]): Invalid[] {
  const byField = new Map<string, Invalid>();
  for (const inv of invalids) {
    const key = String(inv.field);
    if (!byField.has(key)) byField.set(key, inv);
  }
  const fields = [...byField.keys()];
  return [...byField.values()].filter((inv) => {
    const prefix = `${String(inv.field)}.`;
    return !fields.some((f) => f.startsWith(prefix));
  });
}
