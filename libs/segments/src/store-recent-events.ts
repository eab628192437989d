import type { AnalyticStore } from '@cdp/store';
import { RecentEvents, type RecentEvent, type RecentEventsRequest } from './recent-events.port.js';

/** Columns that are the event's envelope or the platform's bookkeeping, not its data. */
const NOT_DATA = new Set(['event_id', 'msg_id', 'svc_id', 'ts', 'received_at', 'type', 'action', 'channel']);

/** The customer's latest events from the store's events table (sorted by svc_id and ts: its own granules). */
export class StoreRecentEvents extends RecentEvents {
  constructor(private readonly store: AnalyticStore) {
    super();
  }

  async recent({ account, customers, limit }: RecentEventsRequest): Promise<RecentEvent[]> {
    if (customers.length === 0) return [];
    const rows = await this.store.query<Record<string, unknown>>(
      account,
      'SELECT * FROM {db}.events WHERE svc_id IN {ids:Array(String)} ' +
        'ORDER BY ts DESC, event_id DESC LIMIT {limit:UInt32}',
      { ids: customers, limit },
    );
    return rows.map((r) => {
      const data: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(r)) {
        if (v === null || v === undefined || v === '' || NOT_DATA.has(k) || k === 'identifiers') continue;
        data[k] = k === 'order' && typeof v === 'string' ? JSON.parse(v) : v;
      }
      return {
        event_id: String(r.event_id),
        ts: isoOf(r.ts),
        type: String(r.type),
        action: String(r.action),
        channel: String(r.channel),
        identifiers: (r.identifiers as Record<string, string>) ?? {},
        data,
      };
    });
  }
}

/** The store's `YYYY-MM-DD hh:mm:ss.mmm` (UTC) as ISO 8601. */
function isoOf(v: unknown): string {
  const text = String(v);
  return /^\d{4}-\d\d-\d\d \d/.test(text) ? `${text.replace(' ', 'T')}Z` : text;
}
