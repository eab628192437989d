/** One of a customer's events as GraphQL's `events` answers it. */
export interface RecentEvent {
  event_id: string;
  /** ISO 8601, UTC. */
  ts: string;
  type: string;
  action: string;
  channel: string;
  identifiers: Record<string, string>;
  /** The event's data fields that have a value (custom ones included), and its `order` when it had one. */
  data: Record<string, unknown>;
}

export interface RecentEventsRequest {
  account: string;
  /** The survivor and every customer merged into it: their events are the survivor's history. */
  customers: string[];
  limit: number;
}

/**
 * A customer's latest events, newest first. Read where the analytic store is: in this process when it
 * holds the store, or by the store's owner (the processor with chDB) over NATS.
 */
export abstract class RecentEvents {
  abstract recent(request: RecentEventsRequest): Promise<RecentEvent[]>;
}
