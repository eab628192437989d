import type { ConsentState } from './consent-state.port.js';

async function* from<T>(items: T[]): AsyncIterable<T> {
  for (const item of items) yield await Promise.resolve(item);
}

/** Account names unique to this run, since a shared Redis outlives it. */
const run = Math.random().toString(36).slice(2, 8);

/** What every ConsentState driver owes the processor and the subscription reads. */
export function consentStateContract(name: string, open: () => Promise<ConsentState>): void {
  describe(`ConsentState contract: ${name}`, () => {
    it('applies changes in order and counts each customer’s versions', async () => {
      const state = await open();
      const account = `acc${run}`;
      const applied = await state.apply(account, [
        { customerId: 'c1', listId: 'news', subscribed: true },
        { customerId: 'c2', listId: 'news', subscribed: true },
        { customerId: 'c1', listId: 'promo', subscribed: true },
        { customerId: 'c1', listId: 'news', subscribed: false },
      ]);
      expect(applied.map((a) => [a.customerId, a.version])).toEqual([
        ['c1', 1],
        ['c2', 1],
        ['c1', 2],
        ['c1', 3],
      ]);
      expect(await state.get(account, 'c1')).toEqual({
        customerId: 'c1',
        version: 3,
        lists: { news: false, promo: true },
        at: {},
      });
      expect(await state.get(account, 'nobody')).toBeUndefined();
      await state.close();
    });

    it('orders changes by `at`: a late or redelivered older change of a list never undoes a newer one', async () => {
      const state = await open();
      const account = `at${run}`;
      // Processors took the toggles in any order; acceptance order is `at`.
      const applied = await state.apply(account, [
        { customerId: 'c', listId: 'news', subscribed: false, at: 40_000 },
        { customerId: 'c', listId: 'news', subscribed: true, at: 39_000 },
        { customerId: 'c', listId: 'promo', subscribed: true, at: 1_000 },
        { customerId: 'c', listId: 'news', subscribed: false, at: 40_000 },
      ]);
      expect(applied.map((a) => [a.version, a.stale ?? false])).toEqual([
        [1, false],
        [1, true],
        [2, false],
        [2, true],
      ]);
      await state.apply(account, [
        { customerId: 'c', listId: 'news', subscribed: true, at: 12_345_678_901_234 },
      ]);
      const [late] = await state.apply(account, [
        { customerId: 'c', listId: 'news', subscribed: false, at: 12_345_678_901_233 },
      ]);
      expect(late).toMatchObject({ version: 3, stale: true });
      expect(await state.get(account, 'c')).toEqual({
        customerId: 'c',
        version: 3,
        lists: { news: true, promo: true },
        at: { news: 12_345_678_901_234, promo: 1_000 },
      });
      await state.close();
    });

    it('any order of the same changes ends in the same memberships', async () => {
      const state = await open();
      const changes = Array.from({ length: 40 }, (_, i) => ({
        customerId: `c${i % 4}`,
        listId: i % 3 ? 'news' : 'promo',
        subscribed: i % 2 === 0,
        at: (i + 1) * 1000 + (i % 7),
      }));
      const shuffled = [...changes].sort((a, b) => ((a.at * 7919) % 101) - ((b.at * 7919) % 101));
      await state.apply(`inorder${run}`, changes);
      for (const change of shuffled) await state.apply(`shuffled${run}`, [change]);
      for (let c = 0; c < 4; c++) {
        const inOrder = await state.get(`inorder${run}`, `c${c}`);
        const reordered = await state.get(`shuffled${run}`, `c${c}`);
        expect(reordered!.lists).toEqual(inOrder!.lists);
      }
      await state.close();
    });

    it('keeps the `at` of what it loads: an older change after a rebuild is still stale', async () => {
      const state = await open();
      const account = `ldat${run}`;
      await state.load(
        account,
        from([{ svc_id: 'c', list_id: 'news', subscribed: false, version: 5, at: 9_000 }]),
      );
      const [old] = await state.apply(account, [
        { customerId: 'c', listId: 'news', subscribed: true, at: 8_000 },
      ]);
      expect(old!.stale).toBe(true);
      expect((await state.get(account, 'c'))!.lists).toEqual({ news: false });
      // Each list's time is read back with it: the membership rule picks among merged customers by it.
      await state.apply(account, [{ customerId: 'c', listId: 'promo', subscribed: true, at: 9_500 }]);
      expect((await state.get(account, 'c'))!.at).toEqual({ news: 9_000, promo: 9_500 });
      await state.close();
    });

    it('walks every customer of an account with its own memberships', async () => {
      const state = await open();
      const account = `walk${run}`;
      const changes = Array.from({ length: 1500 }, (_, i) => ({
        customerId: `c${i}`,
        listId: 'news',
        subscribed: i % 3 !== 0,
      }));
      await state.apply(account, [...changes, { customerId: 'c1', listId: 'news', subscribed: false }]);
      await state.apply(`other${run}`, [{ customerId: 'x', listId: 'news', subscribed: true }]);
      const seen = new Map<string, Record<string, boolean>>();
      for await (const s of state.customers(account)) seen.set(s.customerId, s.lists);
      expect(seen.size).toBe(1500);
      expect(seen.get('c1')).toEqual({ news: false });
      expect(seen.get('c2')).toEqual({ news: true });
      expect([...seen.values()].filter((l) => l.news).length).toBe(999);
      const none = [];
      for await (const s of state.customers(`nobody${run}`)) none.push(s);
      expect(none).toEqual([]);
      await state.close();
    });

    it('keeps accounts apart', async () => {
      const state = await open();
      await state.apply(`one${run}`, [{ customerId: 'c', listId: 'news', subscribed: true }]);
      expect(await state.get(`two${run}`, 'c')).toBeUndefined();
      await state.close();
    });

    it('replaces an account with states read back from the store, and goes on counting', async () => {
      const state = await open();
      const account = `load${run}`;
      await state.apply(account, [{ customerId: 'gone', listId: 'news', subscribed: true }]);
      const n = await state.load(
        account,
        from([
          { svc_id: 'c7', list_id: 'news', subscribed: true, version: 4 },
          { svc_id: 'c7', list_id: 'promo', subscribed: false, version: 6 },
        ]),
      );
      expect(n).toBe(2);
      expect(await state.get(account, 'gone')).toBeUndefined();
      expect(await state.get(account, 'c7')).toEqual({
        customerId: 'c7',
        version: 6,
        lists: { news: true, promo: false },
        at: {},
      });
      const [next] = await state.apply(account, [{ customerId: 'c7', listId: 'news', subscribed: false }]);
      expect(next!.version).toBe(7);
      await state.close();
    });
  });
}
