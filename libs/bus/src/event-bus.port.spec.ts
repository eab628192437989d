import type { IngestMessage } from '@cdp/contracts';
import { mayBeStored, type Delivery } from './event-bus.port.js';

describe('mayBeStored', () => {
  const message = { id: 'm', account: 'a', kind: 'events', receivedAt: 0, records: [] } as IngestMessage;
  const delivery = (deliveryCount: number, resend?: true): Delivery => ({
    handle: 'h',
    deliveryCount,
    message: resend ? { ...message, resend } : message,
  });

  it('is true for a redelivery and for a resend of an Idempotency-Key request, false for a first delivery', () => {
    expect(mayBeStored(delivery(1))).toBe(false);
    expect(mayBeStored(delivery(2))).toBe(true);
    expect(mayBeStored(delivery(1, true))).toBe(true);
  });
});
