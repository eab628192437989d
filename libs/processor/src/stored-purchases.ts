import { BOUGHT_WINDOW_DAYS } from '@cdp/recommendations';
import type { StoreBatch } from '@cdp/store';

/** A purchase older than this keeps nothing out of recommendations (docs/api-notes.md "Recommendations"). */
const BOUGHT_WINDOW_MS = BOUGHT_WINDOW_DAYS * 86_400_000;

/** Store times are `seconds.millis` or `YYYY-MM-DD hh:mm:ss.sss` (toStoreTime), always UTC. */
function storeTimeMs(time: string): number {
  return /^-?\d+(\.\d+)?$/.test(time) ? Number(time) * 1000 : Date.parse(`${time.replace(' ', 'T')}Z`);
}

/** The products a batch's rows record as bought lately, by customer: the purchased line items. */
export function purchasesOf(rows: StoreBatch, now = Date.now()): { customer: string; product: string }[] {
  const out: { customer: string; product: string }[] = [];
  for (const item of rows.lineItems ?? []) {
    if (item.action !== 'purchase' || !item.product_id) continue;
    if (storeTimeMs(item.ts) < now - BOUGHT_WINDOW_MS) continue;
    out.push({ customer: item.svc_id, product: item.product_id });
  }
  return out;
}
