import { MAX_BATCH, type DriverHealth, type EventsMessage, type IngestMessage } from '@cdp/contracts';
import type { BusBacklog } from '@cdp/metrics';

/** One delivery of a message to the processor. */
export interface Delivery {
  /** Bus-assigned handle, unique within the bus; used to settle the delivery. */
  readonly handle: string;
  readonly message: IngestMessage;
  /** 1 on the first delivery; more after a failure, a restart or a crashed consumer. */
  readonly deliveryCount: number;
  /**
   * The message's place in the order the bus accepted it: grows with every message accepted, and is the
   * same on every delivery of the message (the JetStream stream sequence; the local log's sequence).
   */
  readonly sequence: number;
}

/**
 * A record's place in the order the bus accepted it: its message's sequence, then its index in the
 * message. Every delivery of the record gives the same number, and a record accepted later a larger one
 * (a message holds at most MAX_BATCH records: requests, and the loader's messages).
 *
 * This is the one place per-account order is declared. No bus driver, transport or pipeline holds an
 * account's later messages back behind a failed one: every piece of state a record writes is guarded by
 * this number (last writer wins per field, list, identifier part and store row), so records applied in
 * any order — by several processors, after a crash, or around a retried failure — end as acceptance
 * order gives (docs/architecture.md "State in acceptance order").
 */
export function acceptanceOrder(delivery: Delivery, index: number): number {
  if (!Number.isInteger(index) || index < 0 || index >= MAX_BATCH)
    throw new RangeError(`record index ${index} is outside a message`);
  return delivery.sequence * MAX_BATCH + index;
}

/**
 * How long after it was accepted a message may still be delivered: the NATS ingest stream's max age
 * (a message older than that is dropped from the stream, delivered or not). What the processor keeps
 * of a message to tell a redelivery apart (the store's commit log) is kept this long and a day more.
 * The local log has no age limit (it holds unsettled messages only); a committed message it delivers
 * again later than this is still written once: every store write skips the message ids a table holds.
 */
export const REDELIVERY_HORIZON_MS = 7 * 24 * 3600 * 1000;

/**
 * Whether the delivery's rows may be in the store already: a redelivery, or a resend of a request whose
 * earlier publish was never confirmed. The store then skips the message ids it holds.
 */
export function mayBeStored(delivery: Delivery): boolean {
  return delivery.deliveryCount > 1 || delivery.message.resend === true;
}

/**
 * What became of a delivery: stored (ack), try again later (retry: a transient failure), or give up at
 * once with a reason (dead letter: a deterministic failure). How retries wait and when a retried message
 * is given up is the drivers' shared rule, in retry-policy.ts.
 */
export type Settlement =
  | { delivery: Delivery; outcome: 'ack' }
  | { delivery: Delivery; outcome: 'retry'; reason: string }
  | { delivery: Delivery; outcome: 'dead-letter'; reason: string };

export type BatchConsumer = (batch: readonly Delivery[]) => Promise<Settlement[]>;

/**
 * A message whose records are JSON text already (`POST /v3/events` encodes its body on a worker thread,
 * off the main thread): the bus writes that text as it is, and the records are parsed once, when the
 * message is delivered. `head` is the message without its records.
 */
export interface EncodedMessage {
  head: Omit<EventsMessage, 'records'>;
  /** How many records the JSON array holds. */
  count: number;
  recordsJson: string;
}

/** The JSON text of the message an EncodedMessage stands for: its records' text spliced in as it is. */
export function encodedMessageJson({ head, recordsJson }: EncodedMessage): string {
  return `${JSON.stringify(head).slice(0, -1)},"records":${recordsJson}}`;
}

/** The message an EncodedMessage stands for. */
export function decodeMessage({ head, recordsJson }: EncodedMessage): IngestMessage {
  return { ...head, records: JSON.parse(recordsJson) as EventsMessage['records'] };
}

/** Raised by publish when the bus cannot take the message durably now: the API answers 503. */
export class BusUnavailableError extends Error {
  override name = 'BusUnavailableError';
  constructor(
    message: string,
    readonly retryAfterSeconds = 1,
  ) {
    super(message);
  }
}

/** A message the processor gave up on, as operators see it (`GET /admin/v1/dead-letters`). */
export interface DeadLetter {
  /** The bus's id of the dead letter (replay and listing use it). */
  id: string;
  account: string;
  /** The message's kind (events, profiles, …) and its request id. */
  kind: string;
  messageId: string;
  records: number;
  reason: string;
  firstFailedAt: string;
  deadLetteredAt: string;
  deliveries: number;
}

export interface DeadLetterQuery {
  account?: string;
  /** The `next` of the previous page. */
  after?: string;
  limit: number;
}

export interface DeadLetterPage {
  items: DeadLetter[];
  /** Pass as `after` for the next page; absent on the last one. */
  next?: string;
}

/**
 * The durable write log between the API and the processor. `publish` resolves only once the message
 * is durable, so the API's 202 promises nothing the bus could lose. Delivery is at least once; the
 * processor makes redeliveries harmless.
 */
export abstract class EventBus {
  abstract publish(message: IngestMessage): Promise<void>;
  /**
   * Publishes a message whose records are encoded already, with the same promise as publish. A driver
   * that writes JSON takes the text as it is; by default the message is decoded and published.
   */
  publishEncoded(message: EncodedMessage): Promise<void> {
    return this.publish(decodeMessage(message));
  }
  /** Starts delivering batches to the consumer; at most one batch is in flight at a time per consumer. */
  abstract consume(consumer: BatchConsumer): void;
  /** Stops delivering and waits for the batch in flight to settle. */
  abstract stopConsuming(): Promise<void>;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;

  /** Dead letters, oldest first. */
  abstract deadLetters(query: DeadLetterQuery): Promise<DeadLetterPage>;
  abstract deadLetterCount(): Promise<number>;
  /**
   * Publishes the dead letter's message to the ingest stream again, then removes the dead letter.
   * false: no such dead letter. The processor is idempotent per message, so a replay never doubles.
   */
  abstract replayDeadLetter(id: string): Promise<boolean>;
  /** Replays every dead letter of the account; returns how many. */
  abstract replayDeadLetters(account: string): Promise<number>;

  /** What waits in the bus now, for the metrics (read at scrape time); undefined when unknown. */
  backlog(): Promise<BusBacklog | undefined> {
    return Promise.resolve(undefined);
  }
}

/** Told of every message a bus moves to its dead letters (the metrics count them). */
export type DeadLetterObserver = (kind: string, records: number) => void;
