import { eventId, normalizeEvent, toStoreTime, type EventInput } from '@cdp/domain';
import type { EventRow } from '@cdp/store';

/** The row the platform stores for an event (one customer per visitor, else per email): the store baselines' input. */
export function storedEventRow(input: EventInput, received: number, msg: string, index: number): EventRow {
  const e = normalizeEvent(input, received);
  if ('invalidTs' in e) throw new Error('generator made an invalid event');
  const identifiers = Object.fromEntries(Object.entries(e.identifiers).map(([k, v]) => [k, String(v)]));
  return {
    event_id: eventId(msg, index),
    msg_id: msg,
    svc_id: `c-${identifiers.vuid ?? identifiers.email}`,
    ts: toStoreTime(e.ts),
    received_at: toStoreTime(received),
    type: e.type,
    action: e.action,
    channel: e.channel,
    identifiers,
    data: e.data,
    order: null,
  };
}
