import type { IngestMessage } from '@cdp/contracts';
import { acceptanceOrder, mayBeStored, type Delivery } from './event-bus.port.js';

describe('mayBeStored', () => {
  const message = { id: 'm', account: 'a', kind: 'events', receivedAt: 0, records: [] } as IngestMessage;
  const delivery = (deliveryCount: number, resend?: true): Delivery => ({
    handle: 'h',
    deliveryCount,
    sequence: 1,
    message: resend ? { ...message, resend } : message,
  });

  it('is true for a redelivery and for a resend of an Idempotency-Key request, false for a first delivery', () => {
    expect(mayBeStored(delivery(1))).toBe(false);
    expect(mayBeStored(delivery(2))).toBe(true);
    expect(mayBeStored(delivery(1, true))).toBe(true);
  });
});

describe('acceptanceOrder', () => {
  const at = (sequence: number) =>
    ({ handle: String(sequence), deliveryCount: 1, sequence, message: {} as IngestMessage }) as Delivery;

  it('orders records by their message, then by their place in it', () => {
    expect(acceptanceOrder(at(7), 999)).toBeLessThan(acceptanceOrder(at(8), 0));
    expect(acceptanceOrder(at(7), 3)).toBeLessThan(acceptanceOrder(at(7), 4));
    expect(acceptanceOrder(at(7), 3)).toBe(acceptanceOrder({ ...at(7), deliveryCount: 4 }, 3));
  });

  it('refuses an index no message holds', () => {
    expect(() => acceptanceOrder(at(1), 1000)).toThrow(RangeError);
    expect(() => acceptanceOrder(at(1), -1)).toThrow(RangeError);
  });
});
