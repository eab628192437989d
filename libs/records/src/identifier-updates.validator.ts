import { BatchValidator, type Invalid } from '@cdp/contracts';
import {
  customerFieldProblem,
  isJunkIdentifierValue,
  isMessagingIdentifier,
  isStateIdentifier,
  MESSAGING_IDENTIFIERS_TEXT,
  normalizeEvent,
  normalizeStateValue,
  readCustomFields,
  standardEventProblems,
  STATE_IDENTIFIERS_TEXT,
  parseTimestamp,
  readCustomValue,
  type ConsentUpdate,
  type CustomFields,
  type CustomIdentifierNames,
  type CustomValue,
  type EventRecord,
  type MetadataUpdate,
  type ReachabilityUpdate,
  type ReachabilityUpdateType,
} from '@cdp/domain';
import {
  consentUpdateSchema,
  metadataUpdateSchema,
  reachabilityUpdateSchema,
} from './identifier-updates.schemas.js';

/** The time of receipt and the account's custom fields: events' (event_data) and customers' (metadata). */
export interface IdentifierUpdatesContext {
  nowMs: number;
  eventFields: CustomFields;
  customerFields: CustomFields;
  /** The account's custom identifiers, and those of them created with `messaging: true`. */
  identifiers: CustomIdentifierNames;
  messagingIdentifiers: CustomIdentifierNames;
}

interface IdentifierInput {
  identifier_field_name: string;
  identifier_value: string;
}

interface ConsentInput extends IdentifierInput {
  consent: boolean;
  consent_update_reason?: string | null;
  consent_update_ts?: number | string | null;
  event_data?: Record<string, unknown> | null;
}

interface ReachabilityInput extends IdentifierInput {
  reachable: boolean;
  reachable_update_type?: ReachabilityUpdateType | null;
  reachable_update_reason?: string | null;
  reachable_update_ts?: number | string | null;
  event_data?: Record<string, unknown> | null;
}

interface MetadataInput extends IdentifierInput {
  metadata: Record<string, string | number | boolean | null>;
}

/** The identifier of a record: a known identifier field (a messaging one for consent) and a usable value. */
function readIdentifier(
  input: IdentifierInput,
  index: number,
  invalids: Invalid[],
  messaging: boolean,
  context: IdentifierUpdatesContext,
): { field: string; value: string } {
  const field = input.identifier_field_name;
  if (!isStateIdentifier(field, context.identifiers)) {
    invalids.push({
      event: index,
      field: 'identifier_field_name',
      reason: `must be an identifier field: ${STATE_IDENTIFIERS_TEXT}`,
    });
  } else if (messaging && !isMessagingIdentifier(field, context.messagingIdentifiers)) {
    invalids.push({
      event: index,
      field: 'identifier_field_name',
      reason: `must be a messaging identifier: ${MESSAGING_IDENTIFIERS_TEXT}`,
    });
  }
  if (isJunkIdentifierValue(input.identifier_value)) {
    invalids.push({ event: index, field: 'identifier_value', reason: 'identifies no one' });
  } else if (field === 'email') {
    const problem = customerFieldProblem('email', input.identifier_value);
    if (problem) invalids.push({ event: index, field: 'identifier_value', reason: problem });
  }
  return { field, value: normalizeStateValue(field, input.identifier_value) };
}

function readUpdateTs(
  sent: number | string | null | undefined,
  name: string,
  index: number,
  nowMs: number,
  invalids: Invalid[],
): number {
  if (sent === undefined || sent === null) return nowMs;
  const ms = parseTimestamp(sent);
  if (ms === undefined) {
    invalids.push({
      event: index,
      field: name,
      reason: 'must be unix epoch seconds or an ISO 8601 date-time',
    });
    return nowMs;
  }
  return ms;
}

/**
 * The event a consent or reachability change makes, `event_data` read exactly as an event's `data`
 * (as `eventRule` does: custom fields by their type, undefined ones dropped, `ts` readable); its
 * invalids are named `event_data.<field>`. The identifier was checked already (a phone is none of
 * resolution's, yet names the event).
 */
function eventOf(
  type: string,
  action: string,
  id: { field: string; value: string },
  sent: Record<string, unknown> | null | undefined,
  index: number,
  context: IdentifierUpdatesContext,
  ts: number,
  invalids: Invalid[],
): EventRecord {
  const data = sent ?? {};
  const rename = (field: string | string[]) =>
    typeof field === 'string' && field.startsWith('data.') ? `event_data.${field.slice(5)}` : field;
  for (const problem of standardEventProblems(type, action, data))
    invalids.push({ event: index, ...problem, field: rename(problem.field) });
  const custom = readCustomFields(data, context.eventFields, 'data.');
  for (const invalid of custom.invalids)
    invalids.push({ event: index, ...invalid, field: rename(invalid.field) });
  const identifiers = { [id.field]: id.value };
  const record = normalizeEvent({ type, action, identifiers, data }, ts, custom.values);
  if ('invalidTs' in record) {
    invalids.push({
      event: index,
      field: rename(record.field ?? 'data.ts'),
      reason: 'must be unix epoch seconds or an ISO 8601 date-time',
    });
    return { type, action, ts, channel: '', identifiers, data: {} };
  }
  return { ...record, identifiers };
}

export function consentRule(
  input: ConsentInput,
  index: number,
  context: IdentifierUpdatesContext,
): ConsentUpdate | Invalid[] {
  const invalids: Invalid[] = [];
  const id = readIdentifier(input, index, invalids, true, context);
  const ts = readUpdateTs(input.consent_update_ts, 'consent_update_ts', index, context.nowMs, invalids);
  const action = input.consent ? 'opt-in' : 'opt-out';
  const event = eventOf('consent', action, id, input.event_data, index, context, ts, invalids);
  if (invalids.length) return invalids;
  return {
    type: 'consent',
    ...id,
    ts,
    consent: input.consent,
    reason: input.consent_update_reason ?? null,
    event,
  };
}

export function reachabilityRule(
  input: ReachabilityInput,
  index: number,
  context: IdentifierUpdatesContext,
): ReachabilityUpdate | Invalid[] {
  const invalids: Invalid[] = [];
  const id = readIdentifier(input, index, invalids, false, context);
  const ts = readUpdateTs(input.reachable_update_ts, 'reachable_update_ts', index, context.nowMs, invalids);
  const updateType = input.reachable_update_type ?? null;
  if (!input.reachable && updateType === null) {
    invalids.push({
      event: index,
      field: 'reachable_update_type',
      reason: 'is required when reachable is false',
    });
  } else if (input.reachable && updateType !== null) {
    invalids.push({
      event: index,
      field: 'reachable_update_type',
      reason: 'must be null when reachable is true',
    });
  }
  const action = input.reachable ? 'reachable' : 'unreachable';
  const event = eventOf('reachability', action, id, input.event_data, index, context, ts, invalids);
  if (invalids.length) return invalids;
  return {
    type: 'reachability',
    ...id,
    ts,
    reachable: input.reachable,
    update_type: updateType,
    reason: input.reachable_update_reason ?? null,
    event,
  };
}

/**
 * Identifier metadata: every field must exist (an account field of customers, made with the schema
 * API) and its value be of the field's type; null clears the field.
 */
export function metadataRule(
  input: MetadataInput,
  index: number,
  context: IdentifierUpdatesContext,
): MetadataUpdate | Invalid[] {
  const invalids: Invalid[] = [];
  const id = readIdentifier(input, index, invalids, false, context);
  const metadata: Record<string, CustomValue | null> = {};
  for (const [name, sent] of Object.entries(input.metadata)) {
    const type = Object.hasOwn(context.customerFields, name) ? context.customerFields[name] : undefined;
    if (type === undefined) {
      invalids.push({
        event: index,
        field: `metadata.${name}`,
        reason: 'is not a field: create it on customers with the schema API first',
      });
      continue;
    }
    const read = readCustomValue(type, sent);
    if ('reason' in read) invalids.push({ event: index, field: `metadata.${name}`, reason: read.reason });
    else metadata[name] = read.value;
  }
  if (invalids.length) return invalids;
  return { type: 'metadata', ...id, ts: context.nowMs, metadata };
}

export const consentValidator = new BatchValidator<ConsentInput, ConsentUpdate, IdentifierUpdatesContext>(
  consentUpdateSchema,
  'consent update',
  consentRule,
);
export const reachabilityValidator = new BatchValidator<
  ReachabilityInput,
  ReachabilityUpdate,
  IdentifierUpdatesContext
>(reachabilityUpdateSchema, 'reachability update', reachabilityRule);
export const metadataValidator = new BatchValidator<MetadataInput, MetadataUpdate, IdentifierUpdatesContext>(
  metadataUpdateSchema,
  'metadata update',
  metadataRule,
);
