import { BatchValidator, eventSchema, type Invalid } from '@cdp/contracts';
import {
  customerFieldProblem,
  extractIdentifiers,
  IDENTIFIER_REQUIRED_REASON,
  normalizeEvent,
  readCustomFields,
  type CustomFields,
  type CustomIdentifierNames,
  standardEventProblems,
  type EventInput,
  type EventRecord,
} from '@cdp/domain';

/** The time of receipt (the default `ts`) and the account's custom event fields. */
export interface EventsContext {
  nowMs: number;
  custom: CustomFields;
  /** The account's custom identifiers (identifiers besides the built-in ones). */
  customIds?: CustomIdentifierNames;
}

/**
 * One schema-valid event: at least one usable identifier, a readable `ts`, and what its standard
 * type/action needs (spec "Event fields"). Shared by `POST /v3/events` and `POST /v2/events`.
 */
export function eventRule(
  input: EventInput,
  index: number,
  { nowMs, custom, customIds }: EventsContext,
): EventRecord | Invalid[] {
  const invalids: Invalid[] = [];
  if (extractIdentifiers(input.identifiers, customIds).length === 0) {
    invalids.push({ event: index, field: 'identifiers', reason: IDENTIFIER_REQUIRED_REASON });
  }
  const email = customerFieldProblem('email', input.identifiers.email);
  if (email) invalids.push({ event: index, field: 'identifiers.email', reason: email });
  for (const problem of standardEventProblems(input.type, input.action ?? '', input.data ?? {})) {
    invalids.push({ event: index, ...problem });
  }
  const customValues = readCustomFields(input.data, custom, 'data.');
  for (const invalid of customValues.invalids) invalids.push({ event: index, ...invalid });
  const record = normalizeEvent(input, nowMs, customValues.values, customIds);
  if ('invalidTs' in record) {
    invalids.push({
      event: index,
      field: record.field ?? 'data.ts',
      reason: 'must be unix epoch seconds or an ISO 8601 date-time',
    });
    return invalids;
  }
  return invalids.length ? invalids : record;
}

/**
 * `POST /v3/events` records: the schema (compiled once), then at least one usable identifier and a
 * readable `ts`. Custom event fields are read by their types (an unreadable one is a 400 on its
 * field); fields the account has not defined are dropped.
 */
export const eventsValidator = new BatchValidator<EventInput, EventRecord, EventsContext>(
  eventSchema,
  'event',
  eventRule,
);
