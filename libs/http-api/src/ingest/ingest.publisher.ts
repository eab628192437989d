import { Injectable } from '@nestjs/common';
import { BusUnavailableError, EventBus, type EncodedMessage } from '@cdp/bus';
import { ApiError, type IngestMessage } from '@cdp/contracts';
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
