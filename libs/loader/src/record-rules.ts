import { ApiError, type Invalid } from '@cdp/contracts';
import type {
  CustomFields,
  CustomIdentifierNames,
  EventInput,
  EventRecord,
  ProductRecord,
  ProfileRecord,
} from '@cdp/domain';
import { eventsValidator, productsValidator, profilesValidator, v2EventsValidator } from '@cdp/records';

/** What reading a file's record needs of its account; fixed per file so that a resumed load reads the same. */
export interface LoadContext {
  /** The default `ts` of a record without one: when the file was first seen. */
  nowMs: number;
  customers: CustomFields;
  events: CustomFields;
  products: CustomFields;
  /** The account's custom identifiers (SchemaRegistry: AccountSchema.identifierNames). */
  identifiers?: CustomIdentifierNames;
}

export type LoadedRecord =
  | { kind: 'profiles'; record: ProfileRecord }
  | { kind: 'products'; record: ProductRecord }
  | { kind: 'events'; record: EventRecord };

/** One problem of a record, as the activity log and the rejected-records file show it. */
export interface RecordProblem {
  field: string;
  reason: string;
}

/**
 * Runs one record through the validator of the equivalent API call (`POST /v3/profiles`,
 * `POST /v3/objects/products`, `POST /v3/events`), so that a file's record is accepted, refused and
 * normalised exactly as that call would.
 */
function through<T>(parse: () => T[]): T | RecordProblem[] {
  try {
    return parse()[0]!;
  } catch (err) {
    if (err instanceof ApiError && 'invalids' in err.detail) return err.detail.invalids.map(problem);
    throw err;
  }
}

/**
 * A record's problems named by the fields as the file holds them: `prefix` is the part of the API call's
 * field path the file does not have (a customer line has no `attributes`).
 */
export function asSent(problems: RecordProblem[], ...prefixes: string[]): RecordProblem[] {
  return problems.map((p) => {
    const prefix = prefixes.find((x) => p.field.startsWith(x));
    return prefix ? { ...p, field: p.field.slice(prefix.length) } : p;
  });
}

function problem(invalid: Invalid): RecordProblem {
  return {
    field: Array.isArray(invalid.field) ? invalid.field.join('|') : invalid.field,
    reason: invalid.reason,
  };
}

export function customerRecord(
  attributes: Record<string, unknown>,
  context: LoadContext,
): LoadedRecord | RecordProblem[] {
  const record = through(() =>
    profilesValidator.parse(
      { attributes },
      { custom: context.customers, customIds: context.identifiers ?? new Set() },
    ),
  );
  return Array.isArray(record) ? asSent(record, 'attributes.') : { kind: 'profiles', record };
}

export function productRecord(
  fields: Record<string, unknown>,
  context: LoadContext,
): LoadedRecord | RecordProblem[] {
  const record = through(() => productsValidator.parse(fields, context.products));
  return Array.isArray(record) ? record : { kind: 'products', record };
}

function eventsContext(context: LoadContext) {
  return {
    nowMs: context.nowMs,
    custom: context.events,
    ...(context.identifiers ? { customIds: context.identifiers } : {}),
  };
}

export function eventRecord(input: EventInput, context: LoadContext): LoadedRecord | RecordProblem[] {
  const record = through(() => eventsValidator.parse(input, eventsContext(context)));
  return Array.isArray(record) ? record : { kind: 'events', record };
}

/**
 * An event in the original's `POST /v2/events` shape (`{type, data}`, identifiers and `action` inside
 * `data`), read by that route's rules; problems are named as that route names them, which is also
 * where they sit on the file's line.
 */
export function v2EventRecord(
  input: { type: string; data: Record<string, unknown> },
  context: LoadContext,
): LoadedRecord | RecordProblem[] {
  const record = through(() => v2EventsValidator.parse(input, eventsContext(context)));
  return Array.isArray(record) ? record : { kind: 'events', record };
}
