import { INGEST_PATTERN } from '@cdp/contracts';
import { BusTransport } from './bus.transport.js';
import { message } from './event-bus.contract.js';
import type { BatchConsumer, Delivery, EventBus, Settlement } from './event-bus.port.js';
import { ok, type DeliveryResult } from './step-result.js';

/** What a store says of a value it can never take: the same failure on every attempt. */
class Unstorable extends Error {
  readonly deterministic = true;
}

const delivery = (id: string, account = 'acct1'): Delivery => ({
  handle: id,
  deliveryCount: 1,
  sequence: 1,
  message: message(id, 1, account),
});
const outcomes = (s: Settlement[]) =>
  s.map((x) => [x.delivery.message.id, x.outcome, x.delivery.deliveryCount]);

/**
 * The transport between a bus and the processor's handler. The bus is reduced to the consumer it is
 * handed (batches are given to it directly); the handler is a plain function that records each call.
 */
function transportWith(handle: (batch: readonly Delivery[]) => Promise<DeliveryResult[]>) {
  const calls: { ids: string[]; counts: number[] }[] = [];
  let consumer: BatchConsumer | undefined;
  const bus = { consume: (c: BatchConsumer) => (consumer = c) } as unknown as EventBus;
  const transport = new BusTransport(bus);
  transport.addHandler(
    INGEST_PATTERN,
    (batch: readonly Delivery[]) => {
      calls.push({ ids: batch.map((d) => d.message.id), counts: batch.map((d) => d.deliveryCount) });
      return handle(batch);
    },
    true,
  );
  transport.listen(() => undefined);
  return { calls, consume: (batch: Delivery[]) => consumer!(batch) };
}
const ackAll = (batch: readonly Delivery[]): DeliveryResult[] =>
  batch.map((d) => ({ delivery: d, result: ok() }));

describe('BusTransport', () => {
  it('acks a batch the handler took, calling it once', async () => {
    const t = transportWith((batch) => Promise.resolve(ackAll(batch)));
    expect(outcomes(await t.consume([delivery('a'), delivery('b')]))).toEqual([
      ['a', 'ack', 1],
      ['b', 'ack', 1],
    ]);
    expect(t.calls).toHaveLength(1);
  });

  it('splits a failed batch message by message: the good ones cost one more attempt, the bad one is retried alone', async () => {
    const t = transportWith((batch) =>
      batch.some((d) => d.message.id === 'bad')
        ? Promise.reject(new Error('timeout'))
        : Promise.resolve(ackAll(batch)),
    );
    const settled = await t.consume([delivery('a'), delivery('bad'), delivery('c')]);
    expect(outcomes(settled)).toEqual([
      ['a', 'ack', 2],
      ['bad', 'retry', 1],
      ['c', 'ack', 2],
    ]);
    expect(settled[1]!.outcome === 'ack' ? '' : settled[1]!.reason).toBe('Error: timeout');
    // Each message again alone, counted as a redelivery (part of the batch may have been stored).
    expect(t.calls).toEqual([
      { ids: ['a', 'bad', 'c'], counts: [1, 1, 1] },
      { ids: ['a'], counts: [2] },
      { ids: ['bad'], counts: [2] },
      { ids: ['c'], counts: [2] },
    ]);
  });

  it('dead-letters at once a message whose failure is deterministic; a single message is not split', async () => {
    const t = transportWith((batch) =>
      batch.some((d) => d.message.id === 'poison')
        ? Promise.reject(new Unstorable('cannot parse'))
        : Promise.resolve(ackAll(batch)),
    );
    expect(outcomes(await t.consume([delivery('poison'), delivery('fine')]))).toEqual([
      ['poison', 'dead-letter', 1],
      ['fine', 'ack', 2],
    ]);
    t.calls.length = 0;
    expect(outcomes(await t.consume([delivery('poison')]))).toEqual([['poison', 'dead-letter', 1]]);
    expect(t.calls).toHaveLength(1);
  });

  it("holds nothing back behind a failed message: its account's later messages are tried and stored", async () => {
    // x1 (account A) fails and goes back to the bus to be retried; y1 of A and z1 of B come meanwhile.
    let markFailed!: () => void;
    const firstFailed = new Promise<void>((r) => (markFailed = r));
    const t = transportWith(async (batch) => {
      const ids = batch.map((d) => d.message.id);
      if (ids[0] === 'x1') {
        markFailed();
        throw new Error('store timeout');
      }
      await firstFailed;
      return ackAll(batch);
    });
    const first = t.consume([delivery('x1', 'A')]);
    const second = t.consume([delivery('y1', 'A'), delivery('z1', 'B')]);
    const [s1, s2] = await Promise.all([first, second]);
    expect(outcomes(s1)).toEqual([['x1', 'retry', 1]]);
    expect(outcomes(s2)).toEqual([
      ['y1', 'ack', 1],
      ['z1', 'ack', 1],
    ]);
    // Each batch tried once: nothing waited for x1 or was tried again because of it.
    expect(t.calls.map((c) => c.ids.join())).toEqual(['x1', 'y1,z1']);
  });
});
