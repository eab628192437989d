import { Injectable } from '@nestjs/common';
import { BusUnavailableError, EventBus, type EncodedMessage } from '@cdp/bus';
import { accepted, ApiError, type AcceptedBody, type IngestMessage } from '@cdp/contracts';
import { Metrics } from '@cdp/metrics';
import { isResend } from '../idempotency/resend-scope.js';

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
   * A validated batch of a kind with no more to its message than its records: published as the request's
   * message (the request id is the message id, the bus's dedupe key), answered with its 202 body.
   */
  async accept<K extends 'profiles' | 'products' | 'order-updates'>(
    kind: K,
    requestId: string,
    account: string,
    { records, receivedAt }: { records: Extract<IngestMessage, { kind: K }>['records']; receivedAt: number },
  ): Promise<AcceptedBody> {
    await this.publish({ id: requestId, account, kind, receivedAt, records } as Extract<
      IngestMessage,
      { kind: K }
    >);
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
