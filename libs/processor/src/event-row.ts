import { toStoreTime, type EventRecord } from '@cdp/domain';
import type { EventRow } from '@cdp/store';

/** The store row of one resolved event: every step that writes events builds it here. */
export function eventRowOf(
  e: EventRecord,
  at: { eventId: string; msgId: string; customerId: string; receivedAt: number },
): EventRow {
  // By key, not Object.entries: this runs for every event, and the entries are garbage at once.
  const identifiers: Record<string, string> = {};
  for (const kind in e.identifiers) {
    const value = e.identifiers[kind]!;
    identifiers[kind] = Array.isArray(value) ? value.join(',') : value;
  }
  return {
    event_id: at.eventId,
    msg_id: at.msgId,
    svc_id: at.customerId,
    ts: toStoreTime(e.ts),
    received_at: toStoreTime(at.receivedAt),
    type: e.type,
    action: e.action,
    channel: e.channel,
    identifiers,
    data: e.data,
    order: e.order ? JSON.stringify(e.order) : null,
  };
}
