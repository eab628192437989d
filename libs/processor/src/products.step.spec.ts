import type { IngestMessage } from '@cdp/contracts';
import type { ClickHouseStore } from '@cdp/store';
import { emptyBatch } from './store-rows.js';
import { newProcessor, deliveryOf, okValue, tempChdbStore } from './testing/processor-harness.js';

const NOW = '2026-11-22 10:00:00.000';

function products(
  id: string,
  account: string,
  receivedAt: number,
  records: { product_id: string; fields: Record<string, unknown> }[],
  sequence = 1,
) {
  return { ...deliveryOf({ id, account, kind: 'products', receivedAt, records } as IngestMessage), sequence };
}

/** ProductsStep on chDB: updates merged onto the stored row, in delivery order, versioned by arrival. */
describe('ProductsStep', () => {
  let store: ClickHouseStore;
  beforeAll(() => {
    store = tempChdbStore('products-step');
  });
  afterAll(() => store.close());
  let n = 0;

  it('merges a batch in delivery order into one row per product, versioned by the time the API took it', async () => {
    const account = `products${++n}`;
    const { productsStep } = await newProcessor(store);
    const batch = okValue(
      await productsStep.run({
        account,
        deliveries: [
          products('m1', account, 1_000, [
            { product_id: 'p1', fields: { name: 'Shoe', price: 10, colour: 'red' } },
            { product_id: 'p2', fields: { name: 'Sock' } },
          ]),
          products('m2', account, 2_000, [{ product_id: 'p1', fields: { price: 12, colour: null } }]),
        ],
        now: NOW,
      }),
    );
    expect(batch.products).toEqual([
      {
        product_id: 'p1',
        version: 2_000_000,
        msg_id: 'm2',
        updated_at: NOW,
        fields: { name: 'Shoe', price: 12 },
        field_at: JSON.stringify({ name: 1_000, price: 1_000, colour: 1_000 }),
      },
      {
        product_id: 'p2',
        version: 1_000_001,
        msg_id: 'm1',
        updated_at: NOW,
        fields: { name: 'Sock' },
        field_at: JSON.stringify({ name: 1_001 }),
      },
    ]);
  });

  it('keeps the stored fields an update does not name (additive, across batches)', async () => {
    const account = `products${++n}`;
    const { productsStep } = await newProcessor(store);
    const first = okValue(
      await productsStep.run({
        account,
        deliveries: [
          products('a1', account, 1_000, [{ product_id: 'p1', fields: { name: 'Shoe', price: 10 } }]),
        ],
        now: NOW,
      }),
    );
    await store.write(account, { ...emptyBatch(), ...first }, false);
    const second = okValue(
      await productsStep.run({
        account,
        deliveries: [products('a2', account, 3_000, [{ product_id: 'p1', fields: { price: 11 } }])],
        now: NOW,
      }),
    );
    expect(second.products).toEqual([
      expect.objectContaining({ product_id: 'p1', fields: { name: 'Shoe', price: 11 } }),
    ]);
    await store.write(account, { ...emptyBatch(), ...second }, false);
    expect((await store.products(account, ['p1'])).map((r) => r.fields)).toEqual([
      { name: 'Shoe', price: 11 },
    ]);
  });

  it('writes each field by acceptance order: an earlier update applied late keeps only what is still its own', async () => {
    const account = `products${++n}`;
    const { productsStep } = await newProcessor(store);
    const write = async (delivery: ReturnType<typeof products>) => {
      const rows = okValue(await productsStep.run({ account, deliveries: [delivery], now: NOW }));
      await store.write(account, { ...emptyBatch(), ...rows }, delivery.deliveryCount > 1);
    };
    const shoe = { name: 'Shoe', price: 10, colour: 'red' };
    const first = products('u1', account, 1_000, [{ product_id: 'p1', fields: shoe }], 1);
    const second = products(
      'u2',
      account,
      2_000,
      [{ product_id: 'p1', fields: { price: 12, colour: null } }],
      2,
    );
    // Accepted u1 then u2; applied u2 first (u1 was being retried), then u1.
    await write(second);
    await write(first);
    const current = async () => (await store.products(account, ['p1'])).map((r) => r.fields);
    // As if applied in acceptance order: the name from u1, the price and the unset colour from u2.
    expect(await current()).toEqual([{ name: 'Shoe', price: 12 }]);
    // Redelivered, either one changes nothing.
    await write({ ...first, deliveryCount: 2 });
    await write({ ...second, deliveryCount: 2 });
    expect(await current()).toEqual([{ name: 'Shoe', price: 12 }]);
  });

  it('adds nothing for a batch without product updates', async () => {
    const account = `products${++n}`;
    const { productsStep } = await newProcessor(store);
    const rows = okValue(await productsStep.run({ account, deliveries: [], now: NOW }));
    expect(rows.products).toBeUndefined();
  });
});
