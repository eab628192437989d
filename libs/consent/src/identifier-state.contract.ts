import { changeBody, type IdentifierChange, type IdentifierState } from './identifier-state.port.js';

async function* from<T>(items: T[]): AsyncIterable<T> {
  for (const item of items) yield await Promise.resolve(item);
}

/** Account names unique to this run, since a shared Redis outlives it. */
const run = Math.random().toString(36).slice(2, 8);

/** What every IdentifierState driver owes the processor and the identifier reads. */
export function identifierStateContract(name: string, open: () => Promise<IdentifierState>): void {
  describe(`IdentifierState contract: ${name}`, () => {
    const changes: IdentifierChange[] = [
      { field: 'ios_push_tokens', value: 't1', ts: 1000, type: 'consent', consent: true, reason: 'form' },
      { field: 'email', value: 'a@x.com', ts: 2000, type: 'metadata', metadata: { tier: 'gold', n: 3 } },
      {
        field: 'ios_push_tokens',
        value: 't1',
        ts: 3000,
        type: 'reachability',
        reachable: false,
        update_type: 'uninstall',
        reason: null,
      },
      { field: 'email', value: 'a@x.com', ts: 4000, type: 'metadata', metadata: { tier: null, ok: true } },
      { field: 'ios_push_tokens', value: 't1', ts: 5000, type: 'consent', consent: false, reason: null },
    ];
    const expected = {
      t1: {
        version: 3,
        consent: { consent: false, reason: null, ts: 5000 },
        reachability: { reachable: false, update_type: 'uninstall', reason: null, ts: 3000 },
      },
      a: { version: 2, metadata: { fields: { n: 3, ok: true }, ts: 4000 } },
    };

    it('applies changes in order, counting each identifier’s versions; null clears a metadata field', async () => {
      const state = await open();
      const account = `acc${run}`;
      expect(await state.apply(account, changes)).toEqual([1, 1, 2, 2, 3]);
      expect(await state.get(account, 'ios_push_tokens', 't1')).toEqual(expected.t1);
      expect(await state.get(account, 'email', 'a@x.com')).toEqual(expected.a);
      expect(await state.get(account, 'email', 'nobody@x.com')).toBeUndefined();
      expect(await state.get(`other${run}`, 'ios_push_tokens', 't1')).toBeUndefined();
      await state.close();
    });

    it('rebuilds the same state from the stored changes, replacing what it held', async () => {
      const state = await open();
      const account = `load${run}`;
      await state.apply(account, [{ ...changes[0]!, value: 'stale' }]);
      const versions = [1, 1, 2, 2, 3];
      const rows = changes
        .map((c, i) => ({ field: c.field, value: c.value, version: versions[i]!, change: changeBody(c) }))
        .sort((x, y) => x.field.localeCompare(y.field) || x.version - y.version);
      expect(await state.load(account, from(rows))).toBe(2);
      expect(await state.get(account, 'ios_push_tokens', 't1')).toEqual(expected.t1);
      expect(await state.get(account, 'email', 'a@x.com')).toEqual(expected.a);
      expect(await state.get(account, 'ios_push_tokens', 'stale')).toBeUndefined();
      await state.close();
    });
  });
}
