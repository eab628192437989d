import type {
  CustomValue,
  EventRecord,
  IdentifierUpdate,
  OrderUpdateRecord,
  ProductRecord,
  ProfileRecord,
  SubscriptionRecord,
} from '@cdp/domain';

/**
 * One bus message per accepted request (DESIGN "The write path"): the request id is the message id,
 * so a re-published request is recognised, and every record of a request stands or falls together.
 */
interface IngestMessageBase {
  /** The request id (`z-request-id`), unique per request. */
  id: string;
  /** The account the key resolved to; never read from the payload. */
  account: string;
  /** Milliseconds since the epoch when the API accepted the request. */
  receivedAt: number;
  /**
   * Another attempt of a request (same `Idempotency-Key`, same body, same id) whose earlier publish may
   * have reached the bus unconfirmed: the processor stores it as it stores a redelivery, skipping rows
   * of this id already stored, also after the bus's duplicate window.
   */
  resend?: true;
}

export interface EventsMessage extends IngestMessageBase {
  kind: 'events';
  records: EventRecord[];
}

export interface ProfilesMessage extends IngestMessageBase {
  kind: 'profiles';
  records: ProfileRecord[];
}

/** Records of an account-created object (`POST /v3/objects/{object}`), fields read by their types. */
export interface ObjectsMessage extends IngestMessageBase {
  kind: 'objects';
  /** The object's name (an alias sent in the path is resolved by the API). */
  object: string;
  records: Record<string, CustomValue>[];
}

/** Consent changes (`POST /v3/lists/subscriptions`); `key` says which key sent them, for the history. */
export interface SubscriptionsMessage extends IngestMessageBase {
  kind: 'subscriptions';
  records: SubscriptionRecord[];
  /** `public`, `private:<key id>`, or `unsubscribe-link` (a signed link in a message, no key). */
  key: string;
}

/** Product-feed records (`POST /v2/entities` type product, `POST /v3/objects/products`). */
export interface ProductsMessage extends IngestMessageBase {
  kind: 'products';
  records: ProductRecord[];
}

/** Order entity updates (`POST /v2/entities` type order, `POST /v3/objects/orders`): fields only, no event. */
export interface OrderUpdatesMessage extends IngestMessageBase {
  kind: 'order-updates';
  records: OrderUpdateRecord[];
}

/** What one compliance opt-out request asks for and what the API found (spec "Compliance opt-out"). */
export interface OptOutRecord {
  requester: string;
  /** The email and vuid sent (normalized). */
  sent: { kind: string; value: string }[];
  /** The phone sent, matched exactly against profiles. */
  phone?: string;
  /** The customers found when the request was accepted. */
  customers: string[];
  /** Every identifier added to the opt-out pool: those sent and every identifier of the customers found. */
  identifiers: { kind: string; value: string }[];
}

/**
 * A compliance opt-out (`POST /v3/optout`): one record, the request. The processor looks the
 * identifiers up again (a merge may have happened since) and redacts.
 */
export interface OptOutMessage extends IngestMessageBase {
  kind: 'optout';
  /** `private:<key id>`. */
  key: string;
  records: OptOutRecord[];
}

/**
 * Per-identifier state changes (`POST /v3/consent`, `/v3/reachability`, `/v3/identifiers`): one
 * request's records, all of one type. `key` says which key sent them, for the consent history.
 */
export interface IdentifierUpdatesMessage extends IngestMessageBase {
  kind: 'identifier-updates';
  records: IdentifierUpdate[];
  /** `public`, or `private:<key id>`. */
  key: string;
}

export type IngestMessage =
  | EventsMessage
  | ProfilesMessage
  | ObjectsMessage
  | SubscriptionsMessage
  | ProductsMessage
  | OrderUpdatesMessage
  | OptOutMessage
  | IdentifierUpdatesMessage;

/** The pattern under which the processor's handler receives batches of ingest messages. */
export const INGEST_PATTERN = 'ingest';

/** What `GET /health` reports for each port's driver. */
export interface DriverHealth {
  driver: string;
  ready: boolean;
  detail?: string;
}
