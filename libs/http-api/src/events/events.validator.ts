import { BatchValidator, eventSchema, type Invalid } from '@cdp/contracts';
import {
  customerFieldProblem,
  extractIdentifiers,
  IDENTIFIER_REQUIRED_REASON,
  normalizeEvent,
  type EventInput,
  type EventRecord,
} from '@cdp/domain';

/**
 * `POST /v3/events` records: the schema (compiled once), then at least one usable identifier and a
 * readable `ts`. The context is the time of receipt, the default `ts`.
 */
export const eventsValidator = new BatchValidator<EventInput, EventRecord, number>(
  eventSchema,
  'event',
  (input, index, nowMs) => {
    const invalids: Invalid[] = [];
    if (extractIdentifiers(input.identifiers).length === 0) {
      invalids.push({ event: index, field: 'identifiers', reason: IDENTIFIER_REQUIRED_REASON });
    }
    const email = customerFieldProblem('email', input.identifiers.email);
    if (email) invalids.push({ event: index, field: 'identifiers.email', reason: email });
    const record = normalizeEvent(input, nowMs);
    if ('invalidTs' in record) {
      invalids.push({
        event: index,
        field: 'data.ts',
        reason: 'must be unix epoch seconds or an ISO 8601 date-time',
      });
      return invalids;
    }
    return invalids.length ? invalids : record;
  },
);
