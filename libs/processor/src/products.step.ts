import { Injectable } from '@nestjs/common';
import { acceptanceOrder, ok, type Delivery, type Step, type StepResult } from '@cdp/bus';
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

/** When each field of a product was last written, in acceptance order (`acceptanceOrder`). */
type FieldTimes = Record<string, number>;

/**
 * The product feed (spec "Product fields"): no history, an update replaces the values it names and
 * keeps the others (v2 entity calls are additive). The current row is read from the store once per
 * batch and the batch's updates are merged onto it.
 *
 * Each field is written last-writer-wins by acceptance order: the row keeps when each field was last
 * written (`field_at`), and an update writes only the fields no record accepted later wrote already, so
 * an update applied late (a retry, a redelivery) changes only what is still its own. Row versions grow
 * with every row written for the product (and are at least the time the API accepted the request, ms ×
 * 1000 + record index): the current row is the last merged one. Two processor replicas updating the same
 * product at the same instant could each miss the other's fields (with chDB there is one processor;
 * with a ClickHouse server that is the known limit).
 */
@Injectable()
export class ProductsStep implements Step<ProductsInput, ProductRows> {
  constructor(private readonly store: AnalyticStore) {}

  async run({ account, deliveries, now }: ProductsInput): Promise<StepResult<ProductRows>> {
    const updates = deliveries.flatMap((delivery) => {
      const { message } = delivery;
      return message.kind === 'products'
        ? message.records.map((record, index) => ({
            message,
            index,
            record,
            at: acceptanceOrder(delivery, index),
          }))
        : [];
    });
    if (updates.length === 0) return ok({});
    const ids = [...new Set(updates.map((u) => u.record.product_id))];
    const current = new Map<
      string,
      { version: number; fields: Record<string, ProductValue>; times: FieldTimes }
    >();
    for (const row of await this.store.products(account, ids))
      current.set(row.product_id, {
        version: row.version,
        fields: row.fields,
        times: row.field_at ? (JSON.parse(row.field_at) as FieldTimes) : {},
      });
    const rows = new Map<string, ProductRow>();
    for (const { message, index, record, at } of updates) {
      const before = current.get(record.product_id) ?? { version: 0, fields: {}, times: {} };
      const newer = Object.fromEntries(
        Object.entries(record.fields).filter(([field]) => !(before.times[field]! > at)),
      );
      const times = { ...before.times };
      for (const field of Object.keys(newer)) times[field] = at;
      const next = {
        version: Math.max(before.version + 1, message.receivedAt * 1000 + index),
        fields: mergeProduct(before.fields, newer),
        times,
      };
      current.set(record.product_id, next);
      rows.set(record.product_id, {
        product_id: record.product_id,
        version: next.version,
        msg_id: message.id,
        updated_at: now,
        fields: next.fields,
        field_at: JSON.stringify(times),
      });
    }
    return ok({ products: [...rows.values()] });
  }
}
