import { Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import { BaseRpcContext } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { INGEST_PATTERN } from '@cdp/contracts';
import type { Metrics } from '@cdp/metrics';
import type { Delivery, EventBus, Settlement } from './event-bus.port.js';
import { DUPLICATE, failureOf, isFailure, type DeliveryResult } from './step-result.js';

/**
 * A Nest microservice transport over the EventBus port, so the processor's handlers are ordinary
 * `@EventPattern(INGEST_PATTERN)` methods whatever the bus driver. The handler receives a batch of
 * deliveries and returns one result per delivery (StepResult, step-result.ts); this is the one place
 * results become acks, retries with backoff and dead letters, and are counted in the metrics. A batch
 * of several with a failure in it is tried again message by message (`split`).
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
    const results = await this.settle(handler, batch);
    if (this.metrics) countResults(this.metrics, results);
    const settlements = results.map(toSettlement);
    for (const s of settlements) {
      if (s.outcome !== 'ack') {
        this.logger.warn(
          `message ${s.delivery.message.id} (delivery ${s.delivery.deliveryCount}): ${s.outcome}: ${s.reason}`,
        );
      }
    }
    return settlements;
  }

  private async settle(handler: MessageHandler, batch: readonly Delivery[]): Promise<DeliveryResult[]> {
    let results: DeliveryResult[];
    try {
      results = await this.invoke(handler, batch);
    } catch (err) {
      results = batch.map((delivery) => ({ delivery, result: failureOf(err) }));
    }
    if (batch.length === 1 || !results.some((r) => isFailure(r.result))) return results;
    return this.split(handler, batch);
  }

  /**
   * One bad message must not hold back the others: a batch of several with a failure in it is tried
   * again message by message, so the good ones cost one extra attempt and the bad one is settled alone
   * (dead-lettered at once when its failure is deterministic, retried with backoff otherwise).
   */
  private async split(handler: MessageHandler, batch: readonly Delivery[]): Promise<DeliveryResult[]> {
    const results: DeliveryResult[] = [];
    for (const delivery of batch) {
      // Part of the batch may have been stored before it failed: say so, as a redelivery would.
      const again: Delivery = { ...delivery, deliveryCount: delivery.deliveryCount + 1 };
      try {
        results.push(...(await this.invoke(handler, [again])));
      } catch (single) {
        results.push({ delivery, result: failureOf(single) });
      }
    }
    return results;
  }

  private async invoke(handler: MessageHandler, batch: readonly Delivery[]): Promise<DeliveryResult[]> {
    const result: unknown = await handler(batch, new BaseRpcContext([INGEST_PATTERN]));
    return (await lastValueFrom(this.transformToObservable(result))) as DeliveryResult[];
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
 * A delivery's result as the bus settles it: ok and drop are acknowledged, a dead letter is given up at
 * once, a retry goes again after a backoff (the drivers' shared rule, retry-policy.ts).
 */
export function toSettlement({ delivery, result }: DeliveryResult): Settlement {
  switch (result.type) {
    case 'ok':
    case 'drop':
      return { delivery, outcome: 'ack' };
    case 'dead-letter':
      return { delivery, outcome: 'dead-letter', reason: result.reason };
    case 'retry':
      return { delivery, outcome: 'retry', reason: result.reason };
  }
}

/**
 * Records per batch: stored (ok), dropped by reason (acknowledged without being stored again), and each
 * acknowledged message's lag. Dead letters are counted by the bus drivers, which also turn a message
 * retried too often into one (DeadLetterObserver).
 */
export function countResults(metrics: Metrics, results: readonly DeliveryResult[]): void {
  const now = Date.now();
  const stored = new Map<string, number>();
  const dropped = new Map<string, Map<string, number>>();
  const seen = new Set<string>();
  for (const { delivery, result } of results) {
    const { id, kind, records, receivedAt } = delivery.message;
    // A second copy stored in the same batch (tried alone after a split) was not stored twice either.
    const reason =
      result.type === 'drop' ? result.reason : result.type === 'ok' && seen.has(id) ? DUPLICATE : undefined;
    if (result.type === 'ok' && reason === undefined) {
      stored.set(kind, (stored.get(kind) ?? 0) + records.length);
    } else if (reason !== undefined) {
      const byReason = dropped.get(kind) ?? new Map<string, number>();
      byReason.set(reason, (byReason.get(reason) ?? 0) + records.length);
      dropped.set(kind, byReason);
      // A repeat of a message in the same batch: its first copy's lag is the one observed.
      if (reason === DUPLICATE) continue;
    } else continue;
    seen.add(id);
    metrics.messageLag.observe((now - receivedAt) / 1000);
  }
  for (const [kind, n] of stored) metrics.recordsStored.inc({ kind }, n);
  for (const [kind, byReason] of dropped)
    for (const [reason, n] of byReason) metrics.recordsDropped.inc({ kind, reason }, n);
}
