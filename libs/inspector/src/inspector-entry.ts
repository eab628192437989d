/**
 * What the event inspector shows (spec "What the service does": "records incoming events in real time as
 * JSON objects so that senders can verify ingestion"). Entries exist only while a console is open for
 * the account; nothing of them is stored beyond a short in-memory buffer.
 */
export type InspectorEntry = InspectorVerdict | InspectorResolution | InspectorNotice;

/** What the API decided about one record (accepted) or one request (rejected). */
export interface InspectorVerdict {
  type: 'verdict';
  /** Unique per entry: `<request id>#<index>` for a record, the request id for a whole request. */
  id: string;
  at: string;
  request_id: string;
  /** The record's index in its request; absent for a whole (rejected) request. */
  index?: number;
  /** `POST /v3/events`, `POST /v2/entities`, … or `bulk <file>` once bulk files are loaded. */
  route: string;
  /** events, profiles, objects, v2, subscriptions, optout, products, orders, bulk */
  kind: string;
  status: number;
  verdict: 'accepted' | 'rejected';
  /** The record as sent (or, rejected, the request body, cut to its first records). */
  body: unknown;
  /** Accepted: fields the account has not defined, dropped from the record. */
  dropped?: string[];
  /** Rejected: every invalid with its reason, as the 4xx answered them. */
  invalids?: { field: unknown; reason: string; event?: number }[];
  /** Rejected: the answer's message when it had no invalids. */
  message?: string;
  /** Present while sampling: this entry stands for about this many records. */
  sampled_every?: number;
}

/** What the processor made of an accepted record: the customer it resolved to. */
export interface InspectorResolution {
  type: 'resolution';
  at: string;
  /** The bus message id: the request id, or `<request id>.<kind>` for a v2 entities request of several kinds. */
  request_id: string;
  index: number;
  customer_id: string;
  created: boolean;
  merged: string[];
}

/** Said plainly when the view switches to a sample, or back to every record. */
export interface InspectorNotice {
  type: 'notice';
  at: string;
  message: string;
  /** null: every record is shown again. */
  sampling: { every: number; bound: number } | null;
}
