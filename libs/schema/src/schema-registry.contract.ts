import { ApiError } from '@cdp/contracts';
import type { MetadataStore } from '@cdp/metadata';
import { SchemaRegistry } from './schema.registry.js';
import type { NewObject } from './schema.validation.js';

const stores = (name = 'stores', display = 'Stores'): NewObject => ({
  name,
  display_name: display,
  fields: [{ name: 'store_id', type: 'string', display_name: 'Store ID', primary: true }],
});

/** The 400 a call fails with, or a failed test. */
async function refusal(call: Promise<unknown>): Promise<ApiError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

/**
 * The schema registry on a metadata driver. `replicas` gives registries over one shared store, as two
 * API processes would have: each with its own cache, deciding uniqueness only through the store.
 */
export function schemaRegistryContract(
  name: string,
  open: () => { replicas: [MetadataStore, MetadataStore] },
): void {
  describe(`SchemaRegistry on ${name}`, () => {
    let a: SchemaRegistry;
    let b: SchemaRegistry;
    const account = 'acct1';

    beforeEach(() => {
      const { replicas } = open();
      a = new SchemaRegistry(replicas[0]);
      b = new SchemaRegistry(replicas[1]);
    });

    it('keeps an object, its fields and relations; every replica reads them', async () => {
      await a.createObject(account, stores());
      await a.createFields(account, 'stores', { name: 'size', type: 'number', display_name: 'Size' });
      await a.createRelation(account, 'products', {
        name: 'store',
        display_name: 'Store',
        child_object: 'stores',
        join_fields: [{ parent: 'product_id', child: 'store_id' }],
      });
      await a.createFields(account, 'customers', { name: 'tier', type: 'number', display_name: 'Tier' });
      const seen = await b.read(account, true);
      expect(seen.object('stores')!.fields.map((f) => f.name)).toEqual(['store_id', 'size']);
      expect(seen.object('products')!.relations.map((r) => r.name)).toEqual(['parent_product', 'store']);
      expect(seen.customFields('customers')).toEqual({ tier: 'number' });
      expect(seen.customFields('stores')).toEqual({ store_id: 'string', size: 'number' });
      // Other accounts see none of it.
      expect((await b.read('acct2', true)).object('stores')).toBeUndefined();
    });

    it('of two replicas creating the same object name at once, exactly one wins', async () => {
      const results = await Promise.allSettled([
        a.createObject(account, stores('stores', 'Stores A')),
        b.createObject(account, stores('stores', 'Stores B')),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(lost.reason).toBeInstanceOf(ApiError);
      expect((lost.reason as ApiError).detail).toEqual({
        invalids: [{ field: 'name', reason: expect.stringMatching(/^already used/) }],
      });
      expect((await a.read(account, true)).objects().filter((o) => o.name === 'stores')).toHaveLength(1);
    });

    it('of many concurrent creations of one field name, exactly one wins; different names all win', async () => {
      const same = await Promise.allSettled(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? a : b).createFields(account, 'events', {
            name: 'score',
            type: 'number',
            display_name: `Score ${i}`,
          }),
        ),
      );
      expect(same.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const different = await Promise.allSettled(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? a : b).createFields(account, 'events', {
            name: `f${i}`,
            type: 'text',
            display_name: `F ${i}`,
          }),
        ),
      );
      expect(different.filter((r) => r.status === 'fulfilled')).toHaveLength(6);
      expect(Object.keys((await b.read(account, true)).customFields('events')).sort()).toEqual([
        'f0',
        'f1',
        'f2',
        'f3',
        'f4',
        'f5',
        'score',
      ]);
    });

    it('an alias claimed by one replica cannot become another object name on the other', async () => {
      await a.createObject(account, { ...stores(), alias: 'store' });
      await b.read(account); // b caches the schema before ...
      const err = await refusal(b.createObject(account, { ...stores('shops', 'Shops'), alias: 'store' }));
      expect(err.detail).toEqual({ invalids: [{ field: 'alias', reason: 'already used by object stores' }] });
    });

    it('answers 404 for fields of an unknown object', async () => {
      const err = await refusal(
        a.createFields(account, 'planets', { name: 'x', type: 'text', display_name: 'X' }),
      );
      expect(err.status).toBe(404);
      expect(err.detail).toEqual({ message: 'unable to locate object planets' });
    });

    it('the revision grows with every change', async () => {
      const r0 = (await a.read(account, true)).revision;
      await a.createObject(account, stores());
      const r1 = (await b.read(account, true)).revision;
      await b.createFields(account, 'stores', { name: 'size', type: 'number', display_name: 'Size' });
      const r2 = (await a.read(account, true)).revision;
      expect(r1).toBeGreaterThan(r0);
      expect(r2).toBeGreaterThan(r1);
    });
  });
}
