import { Injectable } from '@nestjs/common';
import { ok, type Delivery, type Step, type StepResult } from '@cdp/bus';
import { mergeProduct, type ProductValue } from '@cdp/domain';
import { AnalyticStore, type ProductRow } from '@cdp/store';

export interface ProductsInput {
  account: string;
  deliveries: readonly Delivery[];
  /** Store time of this batch's writes. */
  now: string;
}

/** The product rows to write (absent: the batch had no product updates). */
export interface ProductRows {
  products?: ProductRow[];
}

/**
 * The product feed (spec "Product fields"): no history, an update replaces the values it names and
 * keeps the others (v2 entity calls are additive). The current row is read from the store once per
 * batch and the batch's updates are merged onto it in delivery order.
 *
 * Row versions are the time the API accepted the request (ms × 1000 + record index): the latest request
 * wins whatever order batches reach the store in, and a redelivered message writes the same version
 * again. Two processor replicas updating the same product in the same instant could each miss the
 * other's fields (with chDB there is one processor; with a ClickHouse server that is the known limit).
 */
@Injectable()
export class ProductsStep implements Step<ProductsInput, ProductRows> {
  constructor(private readonly store: AnalyticStore) {}

  async run({ account, deliveries, now }: ProductsInput): Promise<StepResult<ProductRows>> {
    const updates = deliveries.flatMap(({ message }) =>
      message.kind === 'products' ? message.records.map((record, index) => ({ message, index, record })) : [],
    );
    if (updates.length === 0) return ok({});
    const ids = [...new Set(updates.map((u) => u.record.product_id))];
    const current = new Map<string, Record<string, ProductValue>>();
    for (const row of await this.store.products(account, ids)) current.set(row.product_id, row.fields);
    const rows = new Map<string, ProductRow>();
    for (const { message, index, record } of updates) {
      const merged = mergeProduct(current.get(record.product_id) ?? {}, record.fields);
      current.set(record.product_id, merged);
      rows.set(record.product_id, {
        product_id: record.product_id,
        version: message.receivedAt * 1000 + index,
        msg_id: message.id,
        updated_at: now,
        fields: merged,
      });
    }
    return ok({ products: [...rows.values()] });
  }
}
