import { INGEST_PATTERN } from '@cdp/contracts';
import { RejectedFault } from '@cdp/faults';
import { Metrics } from '@cdp/metrics';
import { StoreError } from '@cdp/store';
import { BusTransport } from './bus.transport.js';
import { message } from './event-bus.contract.js';
import type { BatchConsumer, Delivery, EventBus } from './event-bus.port.js';
import {
  deadLetter,
  drop,
  failureOf,
  ok,
  retry,
  type DeliveryResult,
  type StepResult,
} from './step-result.js';

const delivery = (id: string, records = 1): Delivery => ({
  handle: id,
  deliveryCount: 1,
  sequence: 1,
  message: message(id, records),
});

/** The transport over a bus reduced to its consumer, with a handler answering `results` per message id. */
function transportWith(answer: (d: Delivery) => StepResult<unknown> | Promise<never>) {
  const metrics = new Metrics({ defaultMetrics: false });
  const calls: string[][] = [];
  let consumer: BatchConsumer | undefined;
  const bus = { consume: (c: BatchConsumer) => (consumer = c) } as unknown as EventBus;
  const transport = new BusTransport(bus, metrics);
  transport.addHandler(
    INGEST_PATTERN,
    async (batch: readonly Delivery[]): Promise<DeliveryResult[]> => {
      calls.push(batch.map((d) => d.message.id));
      const results: DeliveryResult[] = [];
      for (const d of batch) results.push({ delivery: d, result: await answer(d) });
      return results;
    },
    true,
  );
  transport.listen(() => undefined);
  const counted = async (counter: 'recordsStored' | 'recordsDropped') =>
    (await metrics[counter].get()).values.map((v) => [v.labels, v.value]);
  return { calls, counted, consume: (batch: Delivery[]) => consumer!(batch) };
}

describe('BusTransport: step results to settlements and metrics', () => {
  it('acks ok and drop, dead-letters a dead letter, retries a retry, and counts stored and dropped records by kind and reason', async () => {
    const answers: Record<string, StepResult<unknown>> = {
      stored: ok(),
      copy: drop('duplicate'),
    };
    const t = transportWith((d) => answers[d.message.id]!);
    const settled = await t.consume([delivery('stored', 3), delivery('copy', 2)]);
    expect(settled.map((s) => [s.delivery.message.id, s.outcome])).toEqual([
      ['stored', 'ack'],
      ['copy', 'ack'],
    ]);
    expect(await t.counted('recordsStored')).toEqual([[{ kind: 'events' }, 3]]);
    expect(await t.counted('recordsDropped')).toEqual([[{ kind: 'events', reason: 'duplicate' }, 2]]);

    const single = async (result: StepResult<unknown>) =>
      (await transportWith(() => result).consume([delivery('one')]))[0]!;
    expect(await single(deadLetter('cannot parse'))).toMatchObject({
      outcome: 'dead-letter',
      reason: 'cannot parse',
    });
    expect(await single(retry('timeout'))).toMatchObject({ outcome: 'retry', reason: 'timeout' });
  });

  it('decides a thrown store error by its engine code: unparsable rows dead-lettered at once, the rest retried', async () => {
    const thrown = async (err: Error) =>
      (await transportWith(() => Promise.reject(err)).consume([delivery('one')]))[0]!;
    const unparsable = await thrown(new StoreError('Code: 6. Cannot parse input', 6));
    expect(unparsable).toMatchObject({ outcome: 'dead-letter' });
    expect(unparsable.outcome === 'ack' ? '' : unparsable.reason).toContain('CANNOT_PARSE_TEXT');
    expect(await thrown(new StoreError('Code: 241. Memory limit exceeded', 241))).toMatchObject({
      outcome: 'retry',
    });
    expect(await thrown(new StoreError('connect ECONNREFUSED', undefined))).toMatchObject({
      outcome: 'retry',
    });
    // A rejected record inside a store error (an injected rejection in the engine call) is deterministic.
    expect(
      await thrown(new StoreError('rejected', undefined, { cause: new RejectedFault('store.insert') })),
    ).toMatchObject({ outcome: 'dead-letter' });
    expect(await thrown(new Error('timeout'))).toMatchObject({ outcome: 'retry', reason: 'Error: timeout' });
  });

  it('tries a batch with a failed result in it again message by message, so only the bad one is given up', async () => {
    // Part of the batch may have been stored before it failed: every message goes again alone.
    const batchFails = transportWith((d) => (d.message.id === 'poison' ? deadLetter('cannot parse') : ok()));
    const settled = await batchFails.consume([delivery('a'), delivery('poison'), delivery('b')]);
    expect(settled.map((s) => [s.delivery.message.id, s.outcome, s.delivery.deliveryCount])).toEqual([
      ['a', 'ack', 2],
      ['poison', 'dead-letter', 2],
      ['b', 'ack', 2],
    ]);
    expect(batchFails.calls).toEqual([['a', 'poison', 'b'], ['a'], ['poison'], ['b']]);
  });
});

describe('failureOf', () => {
  it('reads StoreError.code against the deterministic codes, and walks the causes', () => {
    expect(failureOf(new StoreError('Code: 53. Type mismatch', 53)).type).toBe('dead-letter');
    expect(failureOf(new StoreError('Code: 252. Too many parts', 252)).type).toBe('retry');
    const wrapped = new Error('write failed', { cause: new StoreError('Code: 27. Cannot parse', 27) });
    expect(failureOf(wrapped)).toEqual({
      type: 'dead-letter',
      reason: 'Error: write failed [CANNOT_PARSE_INPUT_ASSERTION_FAILED]',
    });
    expect(failureOf('a string')).toEqual({ type: 'retry', reason: 'a string' });
  });
});
