import { Injectable } from '@nestjs/common';
import { BusUnavailableError, EventBus } from '@cdp/bus';
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
    try {
      // Another attempt of an Idempotency-Key request: the store skips what the first one stored.
      await this.bus.publish(isResend() ? { ...message, resend: true } : message);
      this.metrics.recordsAccepted.inc({ kind: message.kind }, message.records.length);
    } catch (err) {
      if (err instanceof BusUnavailableError) {
        // Never a 2xx for data that was not persisted: the client is told to come back.
        throw ApiError.unavailable(`the request was not stored: ${err.message}`, err.retryAfterSeconds);
      }
      throw err;
    }
  }
}
