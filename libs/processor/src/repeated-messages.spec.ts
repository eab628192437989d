import { deadLetter, ok, type Delivery, type DeliveryResult } from '@cdp/bus';
import { processOncePerMessage } from './repeated-messages.js';

const delivery = (handle: string, id: string, resend?: true): Delivery => ({
  handle,
  deliveryCount: 1,
  sequence: 1,
  message: {
    id,
    account: 'a',
    kind: 'events',
    receivedAt: 0,
    records: [],
    ...(resend && { resend }),
  },
});

describe('processOncePerMessage', () => {
  it('processes one copy of a message the batch holds twice, and drops the repeat of a stored one or fails it like its first', async () => {
    const seen: string[][] = [];
    const process = (batch: readonly Delivery[]): Promise<DeliveryResult[]> => {
      seen.push(batch.map((d) => d.handle));
      return Promise.resolve(
        batch.map((d): DeliveryResult => ({
          delivery: d,
          result: d.message.id === 'bad' ? deadLetter('no') : ok(),
        })),
      );
    };
    const batch = [
      delivery('1', 'x'),
      delivery('2', 'y'),
      delivery('3', 'x', true),
      delivery('4', 'bad'),
      delivery('5', 'bad'),
    ];
    const settled = await processOncePerMessage(batch, process);
    expect(seen).toEqual([['1', '2', '4']]);
    // The repeat of a stored message is dropped as a duplicate (the bus acknowledges it).
    expect(settled.map((s) => [s.delivery.handle, s.result.type]).sort()).toEqual([
      ['1', 'ok'],
      ['2', 'ok'],
      ['3', 'drop'],
      ['4', 'dead-letter'],
      ['5', 'dead-letter'],
    ]);
  });

  it('passes a batch without repeats through as it is', async () => {
    const batch = [delivery('1', 'x'), delivery('2', 'y')];
    const settled: DeliveryResult[] = batch.map((d) => ({ delivery: d, result: ok() }));
    expect(await processOncePerMessage(batch, (b) => Promise.resolve(b === batch ? settled : []))).toBe(
      settled,
    );
  });
});
