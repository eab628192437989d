import { describe, expect, it } from '@jest/globals';
import { BusTransport, type BatchConsumer, type Delivery, type EventBus, type Settlement } from '@cdp/bus';
import { INGEST_PATTERN, type IngestMessage } from '@cdp/contracts';
import type { AnalyticStore } from '@cdp/store';
import type { CustomColumns } from './custom-columns.service.js';
import type { IdentityStep } from './identity.step.js';
import { IngestPipeline } from './ingest.pipeline.js';
import type { ObjectsWriter } from './objects.writer.js';
import type { OptOutStep } from './optout.step.js';
import type { OrdersStep } from './orders.step.js';
import type { ProductsStep } from './products.step.js';
import type { SubscriptionsStep } from './subscriptions.step.js';

/** A value the store can never take: what a deterministic store error says of itself. */
class Unstorable extends Error {
  readonly deterministic = true;
}

function delivery(id: string, account: string): Delivery {
  const message: IngestMessage = {
    id,
    account,
    kind: 'profiles',
    receivedAt: Date.now(),
    records: [{ identifiers: { customer_id: id }, attributes: { first_name: id } }],
  } as unknown as IngestMessage;
  return { handle: id, message, deliveryCount: 1 };
}

/**
 * The pipeline with its steps reduced to what orders writes: the store write of an account records
 * the messages it stored, and fails for the poisoned account. Driven through the real BusTransport.
 */
function harness() {
  const stored: string[] = [];
  const identity = {
    resolve: (_account: string, items: readonly unknown[]) =>
      Promise.resolve({
        resolutions: items.map(() => ({
          customerId: 'c',
          created: false,
          linked: [],
          merged: [],
          conflicts: [],
        })),
      }),
    recordEffects: () => undefined,
    redactOptedOut: () => undefined,
    applyProfiles: () => Promise.resolve([]),
    settle: (_account: string, messages: readonly { id: string }[]) => {
      stored.push(...messages.map((m) => m.id));
      return Promise.resolve();
    },
  };
  const columns = {
    // Slow enough that the next batch is handed over while this one is being written.
    prepare: async (account: string) => {
      await new Promise((r) => setTimeout(r, 20));
      if (account === 'poisoned') throw new Unstorable('cannot parse');
      if (account === 'flaky') throw new Error('timeout');
    },
  };
  const pipeline = new IngestPipeline(
    identity as unknown as IdentityStep,
    { write: () => Promise.resolve() } as unknown as AnalyticStore,
    columns as unknown as CustomColumns,
    {} as ObjectsWriter,
    {} as SubscriptionsStep,
    { begin: () => ({ take: () => false, finish: () => Promise.resolve() }) } as unknown as OrdersStep,
    { apply: () => Promise.resolve() } as unknown as ProductsStep,
    {} as OptOutStep,
  );
  let consumer: BatchConsumer | undefined;
  const bus = { consume: (c: BatchConsumer) => (consumer = c) } as unknown as EventBus;
  const transport = new BusTransport(bus);
  transport.addHandler(INGEST_PATTERN, (batch: readonly Delivery[]) => pipeline.process(batch), true);
  transport.listen(() => undefined);
  return { stored, consume: (batch: Delivery[]) => consumer!(batch) };
}

describe('IngestPipeline under the bus transport', () => {
  it("dead-letters a poisoned message alone, and the batch after it does not overtake the failed batch's messages", async () => {
    const h = harness();
    // Two batches in flight at once, as the NATS driver hands them over; the first holds poison.
    const first = h.consume([delivery('p1', 'poisoned'), delivery('a1', 'acct')]);
    const second = h.consume([delivery('a2', 'acct')]);
    const [s1, s2] = await Promise.all([first, second]);
    const outcome = (s: Settlement[]) => Object.fromEntries(s.map((x) => [x.delivery.message.id, x.outcome]));
    expect(outcome(s1)).toEqual({ p1: 'dead-letter', a1: 'ack' });
    expect(outcome(s2)).toEqual({ a2: 'ack' });
    // a1 came before a2 and is stored before it, although a2's batch was ready first.
    expect(h.stored).toEqual(['a1', 'a2']);
  });

  it('retries a transient failure, costing the rest of its batch one more attempt only', async () => {
    const h = harness();
    const s = await h.consume([delivery('f1', 'flaky'), delivery('b1', 'acct'), delivery('b2', 'other')]);
    expect(Object.fromEntries(s.map((x) => [x.delivery.message.id, x.outcome]))).toEqual({
      f1: 'retry',
      b1: 'ack',
      b2: 'ack',
    });
    expect(h.stored).toEqual(['b1', 'b2']);
  });
});
