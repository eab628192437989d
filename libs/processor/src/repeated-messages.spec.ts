import type { Delivery, Settlement } from '@cdp/bus';
import { processOncePerMessage } from './repeated-messages.js';

const delivery = (handle: string, id: string, resend?: true): Delivery => ({
  handle,
  deliveryCount: 1,
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
  it('processes one copy of a message the batch holds twice, and settles the repeat like it', async () => {
    const seen: string[][] = [];
    const process = (batch: readonly Delivery[]): Promise<Settlement[]> => {
      seen.push(batch.map((d) => d.handle));
      return Promise.resolve(
        batch.map((d): Settlement =>
          d.message.id === 'bad'
            ? { delivery: d, outcome: 'dead-letter', reason: 'no' }
            : { delivery: d, outcome: 'ack' },
        ),
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
    expect(settled.map((s) => [s.delivery.handle, s.outcome]).sort()).toEqual([
      ['1', 'ack'],
      ['2', 'ack'],
      ['3', 'ack'],
      ['4', 'dead-letter'],
      ['5', 'dead-letter'],
    ]);
  });

  it('passes a batch without repeats through as it is', async () => {
    const batch = [delivery('1', 'x'), delivery('2', 'y')];
    const settled: Settlement[] = batch.map((d) => ({ delivery: d, outcome: 'ack' }));
    expect(await processOncePerMessage(batch, (b) => Promise.resolve(b === batch ? settled : []))).toBe(
      settled,
    );
  });
});
