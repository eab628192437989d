import { collectIdentifiers, type CustomIdentifierNames } from './identifiers.js';
import { keptOrder, normalizeOrder } from './orders.js';
import { parseTimestamp } from './timestamps.js';
import { readBoolean, type CustomValue } from './custom-fields.js';
import type { FieldType } from './field-types.js';

/** The `data` fields of an event and their types, as the spec's event table lists them. */
export const EVENT_DATA_FIELDS: Readonly<Record<string, FieldType>> = {
  ts: 'timestamp',
  product_id: 'string',
  category: 'string',
  channel: 'string',
  ua: 'string',
  ip: 'string',
  title: 'string',
  hostname: 'string',
  page: 'string',
  source: 'string',
  medium: 'string',
  campaign: 'string',
  content: 'string',
  keywords: 'string',
  language: 'string',
  character_set: 'string',
  days_since_last_visit: 'integer',
  landing: 'boolean',
  referrer: 'string',
  search_term: 'string',
  filter_field: 'string',
  filter_value: 'string',
  sort_direction: 'string',
  sort_field: 'string',
  order: 'object',
  // The list and the new state of a `list`/`subscribe` event (spec "Events": every update of a list
  // subscription generates one).
  list_id: 'string',
  subscribed: 'boolean',
  // What Optimizely's SDKs put in every event (docs/api-notes.md "Optimizely SDKs"): kept as sent.
  idempotence_id: 'string',
  data_source_type: 'string',
  data_source: 'string',
  data_source_version: 'string',
};

/** Fields stored in their own typed column of the events table (everything but ts, channel and order). */
export const EVENT_COLUMN_FIELDS = Object.keys(EVENT_DATA_FIELDS).filter(
  (f) => f !== 'ts' && f !== 'channel' && f !== 'order',
);

/** Channel when the sender gives none: `offline` for the HTTP API (spec event table). */
export const DEFAULT_CHANNEL = 'offline';

/** An event as it travels from the API to the processor: validated, defaults applied, typed. */
export interface EventRecord {
  type: string;
  action: string;
  /** Milliseconds since the epoch, UTC. */
  ts: number;
  channel: string;
  identifiers: Record<string, string | string[]>;
  /** Built-in fields, and the account's custom event fields (read by their type beforehand). */
  data: Record<string, string | number | boolean>;
  order?: Record<string, unknown>;
  /** Names of data fields the account has not defined; dropped, reported to the sender. */
  dropped?: string[];
}

/** The shape the API accepts, after JSON-schema validation. */
export interface EventInput {
  type: string;
  action?: string;
  identifiers: Record<string, unknown>;
  data?: Record<string, unknown>;
}

/**
 * Applies the spec's defaults: `ts` now when absent, `channel` offline when absent. Null data values
 * mean "no value" (every type allows null). Returns `{invalidTs}` when `ts` (or `data.order.ts`, named by
 * `field`) cannot be read. `data.order` keeps only the order and item fields the spec defines.
 */
export function normalizeEvent(
  input: EventInput,
  nowMs: number,
  /** The account's custom `data` fields, already read by their type (readCustomFields); kept, not dropped. */
  custom: Readonly<Record<string, CustomValue | null>> = {},
  /** The account's custom identifiers: identifiers here, and each also an event field of its own. */
  customIds: CustomIdentifierNames = new Set(),
): EventRecord | { invalidTs: true; field?: string } {
  const data: Record<string, string | number | boolean> = {};
  const dropped: string[] = [];
  let order: Record<string, unknown> | undefined;
  let ts = nowMs;
  let channel = DEFAULT_CHANNEL;
  for (const [name, value] of Object.entries(input.data ?? {})) {
    if (value === null || value === undefined) continue;
    const type = Object.hasOwn(EVENT_DATA_FIELDS, name) ? EVENT_DATA_FIELDS[name] : undefined;
    if (type === undefined && Object.hasOwn(custom, name)) {
      if (custom[name] !== null) data[name] = custom[name]!;
    } else if (type === undefined) {
      dropped.push(name);
    } else if (name === 'ts') {
      const parsed = parseTimestamp(value);
      if (parsed === undefined) return { invalidTs: true };
      ts = parsed;
    } else if (name === 'channel') {
      channel = value as string;
    } else if (name === 'order') {
      const sent = value as Record<string, unknown>;
      if ('invalid' in normalizeOrder(sent)) return { invalidTs: true, field: 'data.order.ts' };
      const kept = keptOrder(sent);
      order = kept.order;
      dropped.push(...kept.dropped);
    } else {
      // A boolean arrives in any form of the data types table (the schema checked it: readBoolean).
      data[name] = type === 'boolean' ? readBoolean(value)! : (value as string | number | boolean);
    }
  }
  const identifiers = collectIdentifiers(input.identifiers, customIds);
  // A custom identifier's event field records the value the event was identified by (exports show it).
  for (const name of customIds) {
    const value = identifiers[name];
    if (value !== undefined && data[name] === undefined)
      data[name] = Array.isArray(value) ? value[0]! : value;
  }
  const record: EventRecord = {
    type: input.type,
    action: input.action ?? '',
    ts,
    channel,
    identifiers,
    data,
  };
  if (order) record.order = order;
  if (dropped.length) record.dropped = dropped;
  return record;
}
