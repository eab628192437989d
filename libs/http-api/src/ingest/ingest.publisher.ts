import { Injectable } from '@nestjs/common';
import { BusUnavailableError, EventBus, type EncodedMessage } from '@cdp/bus';
import { accepted, ApiError, type AcceptedBody, type IngestMessage } from '@cdp/contracts';
import { Metrics } from '@cdp/metrics';
import { isResend } from '../idempotency/resend-scope.js';

/** The kinds a batch route publishes as they are, with no key naming the sender. */
type BatchKind = 'events' | 'profiles' | 'products' | 'order-updates';
type MessageOf<K extends IngestMessage['kind']> = Extract<IngestMessage, { kind: K }>;

/** Publishes one accepted request to the bus; returns only once the bus holds it durably. */
@Injectable()
export class IngestPublisher {
  constructor(
    private readonly bus: EventBus,
    private readonly metrics: Metrics,
  ) {}

  async publish(message: IngestMessage): Promise<void> {
    // Another attempt of an Idempotency-Key request: the store skips what the first one stored.
    await this.durably(message.kind, message.records.length, () =>
      this.bus.publish(isResend() ? { ...message, resend: true } : message),
    );
  }

  /**
   * The whole of a batch route once its body is validated: the request's records as one message (its
   * id the request's, so the bus drops a resend), then a 202 listing the fields dropped.
   */
  async acceptBatch<K extends BatchKind>(
    kind: K,
    { records, receivedAt }: { records: MessageOf<K>['records']; receivedAt: number },
    request: { id: string; account: string },
  ): Promise<AcceptedBody> {
    // TypeScript cannot narrow a union member from a generic `kind`; K picks the records' type above.
    await this.publish({
      id: request.id,
      account: request.account,
      kind,
      receivedAt,
      records,
    } as MessageOf<K>);
    return accepted(records);
  }

  /** The same for a message whose records are encoded already. */
  async publishEncoded(message: EncodedMessage): Promise<void> {
    const { head } = message;
    await this.durably(head.kind, message.count, () =>
      this.bus.publishEncoded(isResend() ? { ...message, head: { ...head, resend: true } } : message),
    );
  }

  private async durably(kind: string, records: number, publish: () => Promise<void>): Promise<void> {
    try {
      await publish();
      this.metrics.recordsAccepted.inc({ kind }, records);
    } catch (err) {
      if (err instanceof BusUnavailableError) {
        // Never a 2xx for data that was not persisted: the client is told to come back.
        throw ApiError.unavailable(`the request was not stored: ${err.message}`, err.retryAfterSeconds);
      }
      throw err;
    }
  }
}
