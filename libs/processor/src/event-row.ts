import { toStoreTime, type EventRecord } from '@cdp/domain';
import type { EventRow } from '@cdp/store';

/** What every event row of one bus message shares: made once per message, not once per event. */
export interface SharedEventColumns {
  msgId: string;
  /** The message's receive time as the store takes it (toStoreTime). */
  receivedAt: string;
}

/** The columns all event rows of this bus message share (eventRowOf takes them). */
export function sharedEventColumns(message: { id: string; receivedAt: number }): SharedEventColumns {
  return { msgId: message.id, receivedAt: toStoreTime(message.receivedAt) };
}

/**
 * The store row of one resolved event: every step that writes events builds it here. It runs for
 * every event, so it allocates only the row: the message's part is shared, and the record's
 * identifiers are the row's unless a kind holds a list (push tokens), which the store keeps joined.
 */
export function eventRowOf(
  e: EventRecord,
  message: SharedEventColumns,
  eventId: string,
  customerId: string,
): EventRow {
  return {
    event_id: eventId,
    msg_id: message.msgId,
    svc_id: customerId,
    ts: toStoreTime(e.ts),
    received_at: message.receivedAt,
    type: e.type,
    action: e.action,
    channel: e.channel,
    identifiers: storedIdentifiers(e.identifiers),
    data: e.data,
    order: e.order ? JSON.stringify(e.order) : null,
  };
}

function storedIdentifiers(ids: EventRecord['identifiers']): Record<string, string> {
  // By key, not Object.entries: the entries would be garbage at once.
  let lists = false;
  for (const kind in ids) if (Array.isArray(ids[kind])) lists = true;
  if (!lists) return ids as Record<string, string>;
  const joined: Record<string, string> = {};
  for (const kind in ids) {
    const value = ids[kind]!;
    joined[kind] = Array.isArray(value) ? value.join(',') : value;
  }
  return joined;
}
