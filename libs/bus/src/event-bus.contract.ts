import type { IngestMessage } from '@cdp/contracts';
import { BusUnavailableError, type Delivery, type EventBus, type Settlement } from './event-bus.port.js';

/**
 * The behaviour every EventBus driver owes the API and the processor. A driver's spec calls this
 * with a factory; `open` may be called again on the same `place` to model a restart.
 */
export interface BusHarness {
  open(options?: {
    maxPendingBytes?: number;
    maxBatchRecords?: number;
    maxDeliveries?: number;
  }): Promise<EventBus>;
  /** Removes what the harness created (streams, files); called after each test. */
  cleanup?(): Promise<void>;
}

export function message(id: string, records = 1, account = 'acct1'): IngestMessage {
  return {
    id,
    account,
    kind: 'events',
    receivedAt: Date.now(),
    records: Array.from({ length: records }, (_, i) => ({
      type: 'pageview',
      action: '',
      ts: Date.now(),
      channel: 'offline',
      identifiers: { vuid: `v${i}` },
      data: { page: `/p${i}` },
    })),
  };
}

/** Collects deliveries until `count` messages arrived, settling each with `settle`. */
export function collector(settle: (d: Delivery) => Settlement['outcome'] = () => 'ack') {
  const seen: Delivery[] = [];
  const batches: number[] = [];
  const consumer = (batch: readonly Delivery[]): Promise<Settlement[]> => {
    batches.push(batch.length);
    seen.push(...batch);
    return Promise.resolve(
      batch.map((delivery): Settlement => {
        const outcome = settle(delivery);
        return outcome === 'ack' ? { delivery, outcome } : { delivery, outcome, reason: 'test says so' };
      }),
    );
  };
  return { seen, batches, consumer };
}

export async function until(check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function eventBusContract(name: string, makeHarness: () => BusHarness): void {
  describe(`EventBus contract: ${name}`, () => {
    const made: BusHarness[] = [];
    const harness = (): BusHarness => {
      const h = makeHarness();
      made.push(h);
      return h;
    };
    afterEach(async () => {
      for (const h of made.splice(0)) await h.cleanup?.();
    });

    it('delivers every published message once, in order, after publish resolved', async () => {
      const bus = await harness().open();
      const c = collector();
      bus.consume(c.consumer);
      await Promise.all(Array.from({ length: 50 }, (_, i) => bus.publish(message(`m${i}`))));
      await until(() => c.seen.length === 50);
      expect(c.seen.map((d) => d.message.id)).toEqual(Array.from({ length: 50 }, (_, i) => `m${i}`));
      expect(c.seen.every((d) => d.deliveryCount === 1)).toBe(true);
      await bus.close();
    });

    it('redelivers what was never settled after a restart, and not what was acknowledged', async () => {
      const h = harness();
      const first = await h.open();
      await first.publish(message('acked'));
      const c1 = collector();
      first.consume(c1.consumer);
      await until(() => c1.seen.length === 1);
      await first.stopConsuming();
      await first.publish(message('pending'));
      await first.close();

      const second = await h.open();
      const c2 = collector();
      second.consume(c2.consumer);
      await until(() => c2.seen.length === 1);
      expect(c2.seen[0]!.message.id).toBe('pending');
      expect(c2.seen[0]!.deliveryCount).toBeGreaterThanOrEqual(1);
      await new Promise((r) => setTimeout(r, 100));
      expect(c2.seen).toHaveLength(1);
      await second.close();
    });

    it('retries a failed delivery and dead-letters it after the last attempt', async () => {
      const bus = await harness().open({ maxDeliveries: 3 });
      const c = collector((d) => (d.message.id === 'poison' ? 'retry' : 'ack'));
      bus.consume(c.consumer);
      await bus.publish(message('poison'));
      await bus.publish(message('fine'));
      await until(
        () =>
          c.seen.filter((d) => d.message.id === 'poison').length === 3 &&
          c.seen.some((d) => d.message.id === 'fine'),
      );
      expect(c.seen.filter((d) => d.message.id === 'poison').map((d) => d.deliveryCount)).toEqual([1, 2, 3]);
      await new Promise((r) => setTimeout(r, 300));
      expect(c.seen.filter((d) => d.message.id === 'poison')).toHaveLength(3);
      await bus.close();
    });

    it('hands over whole messages in batches bounded by their record count', async () => {
      const bus = await harness().open({ maxBatchRecords: 25 });
      for (let i = 0; i < 6; i++) await bus.publish(message(`b${i}`, 10));
      const c = collector();
      bus.consume(c.consumer);
      await until(() => c.seen.length === 6);
      expect(Math.max(...c.batches)).toBeLessThanOrEqual(2);
      await bus.close();
    });

    it('refuses to publish, with a retry hint, when it holds too much unprocessed data', async () => {
      const bus = await harness().open({ maxPendingBytes: 2000 });
      await bus.publish(message('a', 5));
      await bus.publish(message('b', 5));
      const refused = await bus.publish(message('c', 5)).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(BusUnavailableError);
      expect((refused as BusUnavailableError).retryAfterSeconds).toBeGreaterThan(0);
      await bus.close();
    });
  });
}
