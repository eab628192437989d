import { MetadataConflictError, type MetadataStore } from './metadata-store.port.js';

/** What every MetadataStore driver owes: durable records, create-if-absent and compare-and-set. */
export function metadataStoreContract(
  name: string,
  open: () => { store: MetadataStore; reopen: () => MetadataStore },
): void {
  describe(`MetadataStore contract: ${name}`, () => {
    it('creates once; a second create of the same key conflicts', async () => {
      const { store } = open();
      expect(await store.create('lists', 'news', { name: 'News' })).toBe(1);
      await expect(store.create('lists', 'news', { name: 'Other' })).rejects.toBeInstanceOf(
        MetadataConflictError,
      );
      expect((await store.get('lists', 'news'))?.value).toEqual({ name: 'News' });
    });

    it('updates only against the revision read (compare-and-set)', async () => {
      const { store } = open();
      await store.create('lists', 'k', { n: 1 });
      const read = (await store.get<{ n: number }>('lists', 'k'))!;
      expect(await store.update('lists', 'k', { n: 2 }, read.revision)).toBe(read.revision + 1);
      await expect(store.update('lists', 'k', { n: 3 }, read.revision)).rejects.toBeInstanceOf(
        MetadataConflictError,
      );
      expect((await store.get('lists', 'k'))?.value).toEqual({ n: 2 });
    });

    it('of many concurrent creates of one key, exactly one wins', async () => {
      const { store } = open();
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => store.create('names', 'same', { i })),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    });

    it('keeps records across a restart and lists a bucket', async () => {
      const { store, reopen } = open();
      await store.create('accounts', 'a1', { id: 'a1' });
      await store.create('accounts', 'a2', { id: 'a2' });
      await store.close();
      const again = reopen();
      expect((await again.list('accounts')).map((v) => v.key).sort()).toEqual(['a1', 'a2']);
      expect(await again.get('accounts', 'missing')).toBeUndefined();
    });

    it('deletes a record for good, across a restart; deleting a missing key does nothing', async () => {
      const { store, reopen } = open();
      await store.create('sessions', 'gone', { n: 1 });
      await store.create('sessions', 'kept', { n: 2 });
      await store.delete('sessions', 'gone');
      await store.delete('sessions', 'never-there');
      expect(await store.get('sessions', 'gone')).toBeUndefined();
      expect((await store.list('sessions')).map((v) => v.key)).toEqual(['kept']);
      await store.close();
      const again = reopen();
      expect(await again.get('sessions', 'gone')).toBeUndefined();
      expect((await again.list('sessions')).map((v) => v.key)).toEqual(['kept']);
      // The key is free again.
      expect(await again.create('sessions', 'gone', { n: 3 })).toBeGreaterThan(0);
    });

    it('hands out copies: changing a read value changes nothing stored', async () => {
      const { store } = open();
      await store.create('x', 'k', { deep: { n: 1 } });
      const read = (await store.get<{ deep: { n: number } }>('x', 'k'))!;
      read.value.deep.n = 99;
      expect((await store.get('x', 'k'))?.value).toEqual({ deep: { n: 1 } });
    });
  });
}
