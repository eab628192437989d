import {
  LEAVE_AS_IS,
  MetadataConflictError,
  updateWithRetry,
  type MetadataStore,
  type Versioned,
} from './metadata-store.port.js';
import { NewestFirstIndex, type IndexSlot } from './newest-first-index.js';

/** The store with its reads counted: what a page of an index costs. */
function counted(store: MetadataStore): { store: MetadataStore; reads: () => number } {
  let reads = 0;
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop === 'get' || prop === 'list') {
        return (...args: unknown[]) => {
          reads += prop === 'list' ? 1_000_000 : 1;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: proxy, reads: () => reads };
}

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

    it('updateWithRetry creates, then changes; racing writers all land, none lost', async () => {
      const { store } = open();
      const first = await updateWithRetry<{ n: number }>(store, 'counters', 'c', (cur) => ({
        n: (cur?.value.n ?? 0) + 1,
      }));
      expect(first.value).toEqual({ n: 1 });
      const results = await Promise.all(
        Array.from({ length: 10 }, () =>
          updateWithRetry<{ n: number }>(store, 'counters', 'c', (cur) => ({ n: (cur?.value.n ?? 0) + 1 })),
        ),
      );
      expect(results.map((r) => r.value.n).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      const stored = (await store.get<{ n: number }>('counters', 'c'))!;
      expect(stored.value).toEqual({ n: 11 });
      expect(stored.revision).toBe(Math.max(...results.map((r) => r.revision)));
      await expect(
        updateWithRetry(store, 'counters', 'c', () => {
          throw new Error('refused');
        }),
      ).rejects.toThrow('refused');
      expect((await store.get('counters', 'c'))?.value).toEqual({ n: 11 });
    });

    it('updateWithRetry writes nothing when told to leave the record, and gives up after its attempts', async () => {
      const { store } = open();
      await store.create('counters', 'd', { n: 1 });
      const left = await updateWithRetry<{ n: number }>(store, 'counters', 'd', (cur) =>
        cur && cur.value.n >= 1 ? LEAVE_AS_IS : { n: 1 },
      );
      expect(left).toBeUndefined();
      expect((await store.get('counters', 'd'))?.revision).toBe(1);
      // Another writer changes the record between every read and write: two conflicts, then the error.
      const raced: MetadataStore = Object.create(store);
      raced.get = async <T>(bucket: string, key: string) => {
        const read = await store.get<{ n: number }>(bucket, key);
        if (read) await store.update(bucket, key, { n: read.value.n + 10 }, read.revision);
        return read as Versioned<T> | undefined;
      };
      let computed = 0;
      const racing = updateWithRetry<{ n: number }>(
        raced,
        'counters',
        'd',
        (cur) => {
          computed += 1;
          return { n: cur!.value.n + 1 };
        },
        { attempts: 2 },
      );
      await expect(racing).rejects.toBeInstanceOf(MetadataConflictError);
      expect(computed).toBe(2);
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

    describe('a newest-first index on the store', () => {
      const ids = (page: { items: { item: string }[] }) => page.items.map((i) => i.item);
      const byId = (slot: IndexSlot) => Promise.resolve(slot.id);

      it('pages newest first: the first page, the next ones, a cursor past the end, across a restart', async () => {
        const { store, reopen } = open();
        const index = new NewestFirstIndex(store, 'idx');
        for (let i = 1; i <= 7; i++) await index.append('acct-a', `a${i}`, 1000 + i);
        await index.append('acct-b', 'b1', 5000);
        const first = await index.page('acct-a', 3, undefined, byId);
        expect(ids(first)).toEqual(['a7', 'a6', 'a5']);
        const second = await index.page('acct-a', 3, first.next, byId);
        expect(ids(second)).toEqual(['a4', 'a3', 'a2']);
        const third = await index.page('acct-a', 3, second.next, byId);
        expect(third).toEqual({ items: [{ slot: 1, item: 'a1' }] });
        // A page that ends exactly at the oldest item says there is nothing after it.
        expect((await index.page('acct-a', 7, undefined, byId)).next).toBeUndefined();
        expect(await index.page('acct-a', 3, 1, byId)).toEqual({ items: [] });
        expect(await index.page('acct-none', 3, undefined, byId)).toEqual({ items: [] });
        // A cursor above the newest slot (forged) reads from the newest.
        expect(ids(await index.page('acct-a', 2, 99, byId))).toEqual(['a7', 'a6']);
        await store.close();
        const again = new NewestFirstIndex(reopen(), 'idx');
        expect(ids(await again.page('acct-a', 100, undefined, byId))).toEqual([
          'a7',
          'a6',
          'a5',
          'a4',
          'a3',
          'a2',
          'a1',
        ]);
        expect(ids(await again.page('acct-b', 100, undefined, byId))).toEqual(['b1']);
      });

      it('gives racing appends distinct slots in time order, and finds slots past a head left behind', async () => {
        const { store } = open();
        const index = new NewestFirstIndex(store, 'idx');
        const appended = await Promise.all(
          Array.from({ length: 8 }, (_, i) => index.append('race', `r${i}`, 2000 - i)),
        );
        expect(appended.map((a) => a.slot).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
        const bySlot = [...appended].sort((x, y) => x.slot - y.slot);
        for (let i = 1; i < bySlot.length; i++)
          expect(bySlot[i]!.at).toBeGreaterThanOrEqual(bySlot[i - 1]!.at);
        // An appender that died before advancing the head: its slot is still read, and the next append follows it.
        await store.create('idx', 'race/9', { id: 'late', at: 3000 });
        expect((await index.append('race', 'after', 1)).slot).toBe(10);
        expect(ids(await index.page('race', 2, undefined, byId))).toEqual(['after', 'late']);
      });

      it('skips what resolve refuses without shortening the page, and reads in proportion to the page', async () => {
        const { store } = open();
        const index = new NewestFirstIndex(store, 'idx');
        for (let i = 1; i <= 40; i++) await index.append('big', `i${i}`, i);
        const skipOdd = (slot: IndexSlot) =>
          Promise.resolve(Number(slot.id.slice(1)) % 2 ? undefined : slot.id);
        const counting = counted(store);
        const page = await new NewestFirstIndex(counting.store, 'idx').page('big', 5, undefined, skipOdd);
        expect(ids(page)).toEqual(['i40', 'i38', 'i36', 'i34', 'i32']);
        expect(page.next).toBe(32);
        // Head and the probe past it, then the slots read for five items and one beyond: no listing.
        expect(counting.reads()).toBeLessThanOrEqual(3 + 12);
        const end = await index.page('big', 5, 4, skipOdd);
        expect(ids(end)).toEqual(['i2']);
        expect(end.next).toBeUndefined();
      });
    });
  });
}
