import { BatchValidator, eventSchema, type Invalid } from '@cdp/contracts';
import {
  extractIdentifiers,
  IDENTIFIER_REQUIRED_REASON,
  normalizeEvent,
  readCustomFields,
  type CustomFields,
  type EventInput,
  type EventRecord,
} from '@cdp/domain';

/**
 * `POST /v3/events` records: the schema (compiled once), then at least one usable identifier and a
 * readable `ts`. The context: the time of receipt (the default `ts`) and the account's custom event
 * fields, whose values are read by their types (an unreadable one is a 400; undefined fields are dropped).
 */
export const eventsValidator = new BatchValidator<
  EventInput,
  EventRecord,
  { nowMs: number; custom: CustomFields }
>(eventSchema, 'event', (input, index, { nowMs, custom }) => {
  const invalids: Invalid[] = [];
  const customValues = readCustomFields(input.data, custom, 'data.');
  for (const invalid of customValues.invalids) invalids.push({ event: index, ...invalid });
  if (extractIdentifiers(input.identifiers).length === 0) {
    invalids.push({ event: index, field: 'identifiers', reason: IDENTIFIER_REQUIRED_REASON });
  }
  const record = normalizeEvent(input, nowMs, customValues.values);
  if ('invalidTs' in record) {
    invalids.push({
      event: index,
      field: 'data.ts',
      reason: 'must be unix epoch seconds or an ISO 8601 date-time',
    });
    return invalids;
  }
  return invalids.length ? invalids : record;
});
