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
      });
      expect(await state.get(account, 'nobody')).toBeUndefined();
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
      });
      const [next] = await state.apply(account, [{ customerId: 'c7', listId: 'news', subscribed: false }]);
      expect(next!.version).toBe(7);
      await state.close();
    });
  });
}
