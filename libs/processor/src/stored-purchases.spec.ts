import type { StoreBatch } from '@cdp/store';
import { purchasesOf } from './stored-purchases.js';

describe('purchasesOf', () => {
  const now = Date.UTC(2026, 5, 1);
  const item = (action: string, product_id: string | null, ts: string) =>
    ({ action, product_id, ts, svc_id: 'c1' }) as NonNullable<StoreBatch['lineItems']>[number];

  it('names the purchased products of the last 180 days, whatever form the store time has', () => {
    const rows = {
      lineItems: [
        item('purchase', 'pan', String(now / 1000 - 60)),
        item('purchase', 'pot', '2026-05-01 10:00:00.000'),
        item('refund', 'cup', '2026-05-01 10:00:00.000'),
        item('purchase', null, '2026-05-01 10:00:00.000'),
        item('purchase', 'old', '2025-11-01 10:00:00.000'),
      ],
    } as unknown as StoreBatch;
    expect(purchasesOf(rows, now)).toEqual([
      { customer: 'c1', product: 'pan' },
      { customer: 'c1', product: 'pot' },
    ]);
    expect(purchasesOf({} as StoreBatch, now)).toEqual([]);
  });
});
