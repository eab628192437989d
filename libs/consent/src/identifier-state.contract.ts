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

    it('writes each part by acceptance order (`at`): any application order ends the same, and so does a rebuild', async () => {
      const state = await open();
      const timed: IdentifierChange[] = changes.map((c, i) => ({
        ...c,
        at: 12_345_678_900_000 + (i + 1) * 1000,
      }));
      // A late toggle of consent and an older metadata change, applied after the newer ones.
      timed.push({ ...changes[0]!, ts: 500, consent: true, at: 12_345_678_899_000 } as IdentifierChange);
      const inOrder = `ino${run}`;
      const shuffled = `shf${run}`;
      await state.apply(inOrder, [timed[5]!, ...timed.slice(0, 5)]);
      await state.apply(shuffled, [timed[4]!, timed[3]!]);
      await state.apply(shuffled, [timed[2]!, timed[1]!, timed[0]!, timed[5]!]);
      await state.apply(shuffled, [timed[3]!]);
      for (const [field, value] of [
        ['ios_push_tokens', 't1'],
        ['email', 'a@x.com'],
      ] as const) {
        const x = await state.get(inOrder, field, value);
        const y = await state.get(shuffled, field, value);
        expect({ ...y, version: 0 }).toEqual({ ...x, version: 0 });
      }
      const t1 = await state.get(shuffled, 'ios_push_tokens', 't1');
      expect(t1!.consent).toEqual(expected.t1.consent);
      expect((await state.get(shuffled, 'email', 'a@x.com'))!.metadata).toEqual(expected.a.metadata);
      // A rebuild replays the stored changes (by version) to the same state, times included.
      const rows = [timed[4]!, timed[3]!, timed[2]!, timed[1]!, timed[0]!, timed[5]!, timed[3]!].map(
        (c, i) => ({
          field: c.field,
          value: c.value,
          version: i + 1,
          change: changeBody(c),
        }),
      );
      rows.sort((x, y) => x.field.localeCompare(y.field) || x.version - y.version);
      const rebuilt = `reb${run}`;
      await state.load(rebuilt, from(rows));
      expect((await state.get(rebuilt, 'ios_push_tokens', 't1'))!.consent).toEqual(expected.t1.consent);
      await state.apply(rebuilt, [timed[5]!]);
      expect((await state.get(rebuilt, 'ios_push_tokens', 't1'))!.consent).toEqual(expected.t1.consent);
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
