/**
 * What the console's customer page reads from the console API: the server answers these shapes and the
 * console renders them, both from this file. It imports nothing, so the console's bundle can import its
 * types without pulling in the server (as it does the inspector's, libs/inspector/src/inspector-entry.ts).
 */

export interface IdentifierView {
  kind: string;
  value: string;
}

/** The identifiers a customer can be found by: the named ones, any alias, the account's custom ones. */
export interface IdentifierKindsView {
  named: string[];
  alias_prefix: string;
  custom: string[];
}

/** A part of the page that could not be read, with why; the rest of the page still shows. */
export interface Unavailable {
  unavailable: string;
}

export interface CustomerPageView {
  /** The platform's id of the customer (the survivor of every merge). */
  customer: string;
  found_by: IdentifierView;
  redacted: boolean;
  attributes: Record<string, unknown>;
  /** Which attributes are the account's custom customer fields. */
  custom_fields: string[];
  identifiers: IdentifierView[];
  /** The customers merged into this one. */
  merged: string[];
  /** Where each identifier was first seen, and the merges that joined the customers (the store's record). */
  history: { links: LinkView[]; merges: MergeView[]; consent: ConsentChangeView[] } | Unavailable;
  opted_in: boolean;
  lists: { list_id: string; name: string; subscribed: boolean }[];
  recommendations: Record<string, unknown>[] | Unavailable;
  /** Every segment of the account and whether the customer qualifies now, as GraphQL's `audiences` answers. */
  segments: SegmentStateView[] | Unavailable;
}

export interface SegmentStateView {
  id: string;
  name: string;
  state: 'qualified' | 'not_qualified';
}

export interface MergeView {
  /** The customer merged away, and the one that holds its history since. */
  loser: string;
  survivor: string;
  /** The account's merge counter. */
  seq: number;
  /** The identifiers of the record that joined them (`kind:value`). */
  cause: string[];
  /** The bus message that carried that record. */
  msg_id: string;
  at: string;
}

export interface LinkView {
  kind: string;
  value: string;
  /** The customer the identifier was first linked to (a merged one, for an identifier it brought along). */
  first_customer: string;
  first_seen: string;
}

export interface ConsentChangeView {
  list_id: string;
  subscribed: boolean;
  identifier_kind: string;
  identifier_value: string;
  source: string;
  api_key: string;
  changed_at: string;
}

export interface TimelineEvent {
  event_id: string;
  ts: string;
  received_at: string;
  type: string;
  action: string;
  channel: string;
  identifiers: Record<string, string>;
  /** The event's data fields (custom ones included) that have a value. */
  data: Record<string, unknown>;
  /** The event's order (with its items) when it carried one. */
  order?: Record<string, unknown> & { items?: Record<string, unknown>[] };
  /** The customer's order total so far: every order event up to and including this one. */
  tally?: number;
}

export interface TimelinePage {
  events: TimelineEvent[];
  /** Pass as `before` for the next (older) page; absent on the last one. */
  next?: string;
}
