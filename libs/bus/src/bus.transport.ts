import { Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import { BaseRpcContext } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { INGEST_PATTERN } from '@cdp/contracts';
import type { Metrics } from '@cdp/metrics';
import type { Delivery, EventBus, Settlement } from './event-bus.port.js';
import { isDeterministicFailure, PrecededByFailure } from './retry-policy.js';

/**
 * A Nest microservice transport over the EventBus port, so the processor's handlers are ordinary
 * `@EventPattern(INGEST_PATTERN)` methods whatever the bus driver. The handler receives a batch of
 * deliveries and returns one settlement per delivery; this is the one place settlements reach the bus.
 */
export class BusTransport extends Server implements CustomTransportStrategy {
  constructor(
    private readonly bus: EventBus,
    private readonly metrics?: Metrics,
  ) {
    super();
  }

  listen(callback: (...optionalParams: unknown[]) => unknown): void {
    const handler = this.getHandlerByPattern(INGEST_PATTERN);
    if (!handler) throw new Error(`no @EventPattern('${INGEST_PATTERN}') handler is registered`);
    this.bus.consume((batch) => this.deliver(handler, batch));
    callback();
  }

  private async deliver(handler: MessageHandler, batch: readonly Delivery[]): Promise<Settlement[]> {
    const settlements = await this.settle(handler, batch);
    if (this.metrics) countSettled(this.metrics, settlements);
    for (const s of settlements) {
      if (s.outcome !== 'ack') {
        this.logger.warn(
          `message ${s.delivery.message.id} (delivery ${s.delivery.deliveryCount}): ${s.outcome}: ${s.reason}`,
        );
      }
    }
    return settlements;
  }

  /** The retries of the last failed batch: a batch that failed only because of it waits for them. */
  private retrying: Promise<unknown> = Promise.resolve();

  private async settle(handler: MessageHandler, batch: readonly Delivery[]): Promise<Settlement[]> {
    try {
      return await this.invoke(handler, batch);
    } catch (err) {
      if (err instanceof PrecededByFailure) {
        // The failed batch's retries are queued on seeing its failure, in this same turn: let them
        // start, wait for them, then try this batch again whole.
        await new Promise((resolve) => setImmediate(resolve));
        await this.retrying;
        return this.settle(handler, batch);
      }
      const retried = this.retry(handler, batch, err);
      this.retrying = retried.catch(() => undefined);
      return retried;
    }
  }

  private async retry(
    handler: MessageHandler,
    batch: readonly Delivery[],
    err: unknown,
  ): Promise<Settlement[]> {
    if (batch.length === 1) return [failed(batch[0]!, err)];
    // One bad message must not hold back the others: retry the batch message by message, so the
    // good ones cost one extra attempt and the bad one is settled alone (dead-lettered at once when
    // its failure is deterministic).
    const settlements: Settlement[] = [];
    for (const delivery of batch) {
      // Part of the batch may have been stored before it failed: say so, as a redelivery would.
      const again: Delivery = { ...delivery, deliveryCount: delivery.deliveryCount + 1 };
      try {
        settlements.push(...(await this.invoke(handler, [again])));
      } catch (single) {
        settlements.push(failed(delivery, single));
      }
    }
    return settlements;
  }

  private async invoke(handler: MessageHandler, batch: readonly Delivery[]): Promise<Settlement[]> {
    const result: unknown = await handler(batch, new BaseRpcContext([INGEST_PATTERN]));
    return (await lastValueFrom(this.transformToObservable(result))) as Settlement[];
  }

  async close(): Promise<void> {
    this.logger.debug?.('bus transport: stopping the consumer');
    await this.bus.stopConsuming();
    this.logger.debug?.('bus transport: consumer stopped');
  }

  on(): void {
    throw new Error('BusTransport has no events to listen to');
  }

  unwrap<T>(): T {
    return this.bus as T;
  }
}

/**
 * Records of acknowledged messages, per batch: stored, or dropped when a second copy of a message came
 * in the same batch (the processor stored it once). Dead letters are counted by the bus drivers, which
 * also turn a retried message into one.
 */
function countSettled(metrics: Metrics, settlements: readonly Settlement[]): void {
  const now = Date.now();
  const seen = new Set<string>();
  const stored = new Map<string, number>();
  const dropped = new Map<string, number>();
  for (const { delivery, outcome } of settlements) {
    if (outcome !== 'ack') continue;
    const { id, kind, records, receivedAt } = delivery.message;
    const tally = seen.has(id) ? dropped : stored;
    tally.set(kind, (tally.get(kind) ?? 0) + records.length);
    if (seen.has(id)) continue;
    seen.add(id);
    metrics.messageLag.observe((now - receivedAt) / 1000);
  }
  for (const [kind, n] of stored) metrics.recordsStored.inc({ kind }, n);
  for (const [kind, n] of dropped) metrics.recordsDropped.inc({ kind, reason: 'duplicate' }, n);
}

/** A failure that will recur on every attempt is dead-lettered at once; any other is retried. */
function failed(delivery: Delivery, err: unknown): Settlement {
  return isDeterministicFailure(err)
    ? { delivery, outcome: 'dead-letter', reason: describe(err) }
    : { delivery, outcome: 'retry', reason: describe(err) };
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  return `${err.name}${typeof code === 'number' ? ` (code ${code})` : ''}: ${err.message}`;
}
