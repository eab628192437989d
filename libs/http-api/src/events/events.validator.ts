import { BatchValidator, eventSchema, type Invalid } from '@cdp/contracts';
import {
  extractIdentifiers,
  IDENTIFIER_REQUIRED_REASON,
  normalizeEvent,
  standardEventProblems,
  type EventInput,
  type EventRecord,
} from '@cdp/domain';

/**
 * One schema-valid event: at least one usable identifier, a readable `ts`, and what its standard
 * type/action needs (spec "Event fields"). Shared by `POST /v3/events` and `POST /v2/events`.
 */
export function eventRule(input: EventInput, index: number, nowMs: number): EventRecord | Invalid[] {
  const invalids: Invalid[] = [];
  if (extractIdentifiers(input.identifiers).length === 0) {
    invalids.push({ event: index, field: 'identifiers', reason: IDENTIFIER_REQUIRED_REASON });
  }
  for (const problem of standardEventProblems(input.type, input.action ?? '', input.data ?? {})) {
    invalids.push({ event: index, ...problem });
  }
  const record = normalizeEvent(input, nowMs);
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
 * readable `ts`. The context is the time of receipt, the default `ts`.
 */
export const eventsValidator = new BatchValidator<EventInput, EventRecord, number>(
  eventSchema,
  'event',
  eventRule,
);
