import type { AnalyticStore } from '@cdp/store';

/**
 * Writes what the processor writes for a purchase message, as far as recommendations read it: the
 * purchased line items, then the message's commit (at `commitMs`). `ts` is a store time of the order.
 */
export async function storePurchase(
  store: AnalyticStore,
  account: string,
  message: { id: string; customer: string; products: string[]; ts: string; commitMs: number; price?: number },
): Promise<void> {
  const { id, customer, ts, price = 10 } = message;
  const items = message.products.map(
    (p, i) =>
      `('${id}-${i}', '${id}', 'o-${id}', '${customer}', '${ts}', 'order', 'purchase', '${p}', 1, ${price})`,
  );
  await store.execute(
    account,
    `INSERT INTO {db}.line_items (line_item_id, msg_id, order_id, svc_id, ts, event, action, product_id, quantity, price)
VALUES ${items.join(', ')}`,
  );
  await store.execute(
    account,
    `INSERT INTO {db}.ingest_commits (msg_id, done, at) VALUES ('${id}', 1, fromUnixTimestamp64Milli(${message.commitMs}, 'UTC'))`,
  );
}

/** Product records with no field but their id. */
export async function storeProducts(store: AnalyticStore, account: string, ids: string[]): Promise<void> {
  await store.execute(
    account,
    `INSERT INTO {db}.products (product_id, version, msg_id, updated_at) VALUES ${ids
      .map((id) => `('${id}', 1, 'products', now64(3))`)
      .join(', ')}`,
  );
}
