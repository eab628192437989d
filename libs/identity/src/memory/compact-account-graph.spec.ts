import fc from 'fast-check';
import { identityKey, type Identifier } from '@cdp/domain';
import { graphRows } from '../identity.contract.js';
import { bornKey, resolveRecord, type ResolveInput } from '../resolution.js';
import { AccountGraph } from './account-graph.js';
import { CompactAccountGraph } from './compact-account-graph.js';
import { InternedStrings } from './interned-strings.js';
import { MemoryIdentityIndex } from './memory-identity-index.adapter.js';

/** Texts that are equal up to a case, a prefix, or a unit above 255: what a sloppy comparison would confuse. */
const text = fc.oneof(
  fc.constantFrom('', 'a', 'A', 'ab', 'a\u0000b', 'é', '\u00e9\u00e9', 'Ā', '\u0100a', '😀', 'ab\u0101'),
  fc.string({ maxLength: 6, unit: fc.constantFrom('a', 'b', 'é', 'ÿ', 'Ā', '\u0000', '😀') }),
  fc.string({ maxLength: 40, unit: 'binary' }),
);
const key = fc.tuple(fc.integer({ min: 0, max: 300 }), text);

/** Hashes from good to useless: with a constant one, every key collides with every other. */
const hashes: [string, ((kind: number, text: string) => number) | undefined][] = [
  ['the real hash', undefined],
  ['a hash of the length only', (_kind, t) => t.length],
  ['a constant hash', () => 7],
];

describe('InternedStrings', () => {
  for (const [name, hash] of hashes) {
    it(`numbers keys exactly like a map of (kind, text), with ${name}`, () => {
      fc.assert(
        fc.property(fc.array(key, { maxLength: 200 }), fc.array(key, { maxLength: 20 }), (keys, probes) => {
          const set = new InternedStrings(hash);
          const model = new Map<string, number>();
          for (const [kind, t] of keys) {
            const k = `${kind}\u0001${t}`;
            const expected = model.get(k) ?? model.size;
            model.set(k, expected);
            expect(set.intern(kind, t)).toBe(expected);
          }
          expect(set.size).toBe(model.size);
          for (const [k, n] of model) {
            const cut = k.indexOf('\u0001');
            expect(set.text(n)).toBe(k.slice(cut + 1));
            expect(set.kind(n)).toBe(Number(k.slice(0, cut)));
          }
          for (const [kind, t] of probes)
            expect(set.find(kind, t)).toBe(model.get(`${kind}\u0001${t}`) ?? -1);
        }),
        { numRuns: 300 },
      );
    });
  }

  it('keeps every key through many rehashes and arena chunks', () => {
    // 4 KiB chunks: ~300 keys of ~300 bytes fill ~25 chunks, with table doublings on the way.
    const set = new InternedStrings(undefined, 4096);
    const long = 'x'.repeat(290);
    const textOf = (i: number) => `${i}${long}${i % 7 === 0 ? 'Ā' : ''}`;
    const n = 2_000;
    let numbered = 0;
    for (let i = 0; i < n; i++) if (set.add(i % 3, textOf(i)) === i) numbered++;
    expect(numbered).toBe(n);
    expect(set.bytes).toBeGreaterThan(n * 290);
    for (let i = 0; i < n; i++) {
      expect(set.find(i % 3, textOf(i))).toBe(i);
      expect(set.find((i + 1) % 3, textOf(i))).toBe(-1);
      expect(set.text(i)).toBe(textOf(i));
    }
    expect(set.find(0, textOf(n))).toBe(-1);
    expect(() => {
      for (let i = n; ; i++) set.add(0, textOf(i));
    }).toThrow(/256 chunks/);
    expect(() => new InternedStrings(undefined, 64).add(0, long)).toThrow(RangeError);
  });
});

const kinds = ['email', 'vuid', 'customer_id'] as const;
const identifier = fc
  .tuple(fc.constantFrom(...kinds), fc.integer({ min: 0, max: 8 }))
  .map(([kind, n]): Identifier => ({ kind, value: kind === 'customer_id' ? `C${n % 3}` : `${kind[0]}${n}` }));
const records = fc.array(
  fc
    .uniqueArray(identifier, { minLength: 1, maxLength: 4, selector: identityKey })
    .map((ids) =>
      ids.filter(
        (id, i) => id.kind !== 'customer_id' || ids.findIndex((x) => x.kind === 'customer_id') === i,
      ),
    ),
  { minLength: 1, maxLength: 60 },
);

const inputs = (all: Identifier[][]): ResolveInput[] =>
  all.map((ids, i) => ({
    ids,
    seed: `s${i}`,
    born: bornKey((1_000 + (i % 5)) * 1000 + (i % 1000)),
    message: `m${i}`,
    index: 0,
  }));

/** Which identifiers share a customer, and what each customer holds, as comparable text. */
function describeGraph(
  ids: Identifier[],
  owner: (id: Identifier) => string | undefined,
  absorbed: (c: string) => string[],
  members: (c: string) => Identifier[],
) {
  const customers = [...new Set(ids.map((id) => owner(id)!))].sort();
  return customers.map((c) => ({
    c,
    absorbed: absorbed(c).sort(),
    members: members(c).map(identityKey).sort(),
  }));
}

describe('CompactAccountGraph', () => {
  it('resolves like the graph of maps, merge chains included, and holds the same graph after', () => {
    fc.assert(
      fc.property(records, (all) => {
        const maps = new AccountGraph();
        const compact = new CompactAccountGraph();
        // `merged` is a set (the identity properties contract compares it sorted too): the compact graph
        // lists a loser's own absorbed chain latest first, the maps oldest first.
        const asSet = (r: ReturnType<typeof resolveRecord>) => ({ ...r, merged: [...r.merged].sort() });
        for (const input of inputs(all))
          expect(asSet(resolveRecord(compact, input))).toEqual(asSet(resolveRecord(maps, input)));
        const ids = all.flat();
        expect(
          describeGraph(
            ids,
            (id) => {
              const c = compact.owner(id);
              return c === undefined ? undefined : compact.idOf(c);
            },
            (c) => compact.absorbedBy(compact.customer(c)!),
            (c) => compact.identifiersOf(compact.customer(c)!),
          ),
        ).toEqual(
          describeGraph(
            ids,
            (id) => maps.owner(id),
            (c) => maps.absorbed.get(c) ?? [],
            (c) => maps.members.get(c) ?? [],
          ),
        );
        expect(compact.mergeSeq).toBe(maps.mergeSeq);
      }),
      { numRuns: 500 },
    );
  });

  it('follows a long chain of merges: every customer of it ends in the oldest one', () => {
    const graph = new CompactAccountGraph();
    const n = 300;
    for (let i = 0; i < n; i++)
      resolveRecord(graph, {
        ids: [{ kind: 'vuid', value: `v${i}` }],
        seed: `c${i}`,
        born: bornKey(i),
        message: 'm',
        index: i,
      });
    // Each record joins the youngest customer left with the next younger one: n - 1 merges, each into an older customer.
    for (let i = n - 1; i > 0; i--) {
      const r = resolveRecord(graph, {
        ids: [
          { kind: 'vuid', value: `v${i}` },
          { kind: 'vuid', value: `v${i - 1}` },
        ],
        seed: `x${i}`,
        born: bornKey(10_000_000 + i),
        message: 'x',
        index: i,
      });
      expect(r.merged).toHaveLength(n - i);
    }
    const root = graph.owner({ kind: 'vuid', value: 'v0' })!;
    for (let i = 0; i < n; i++) expect(graph.owner({ kind: 'vuid', value: `v${i}` })).toBe(root);
    expect(graph.absorbedBy(root)).toHaveLength(n - 1);
    expect(graph.identifiersOf(root)).toHaveLength(n);
    for (let i = 1; i < n; i++)
      expect(graph.survivorOf(graph.customer(graph.absorbedBy(root)[i - 1]!)!)).toBe(root);
  });
});

describe('the memory index rebuilt from the rows its own resolutions wrote', () => {
  it('holds the same graph as the index that wrote them', async () => {
    await fc.assert(
      fc.asyncProperty(records, async (all) => {
        const live = new MemoryIdentityIndex();
        const links: { kind: string; value: string; svc_id: string; born: string }[] = [];
        const merges: { loser: string; survivor: string; seq: number }[] = [];
        for (const input of inputs(all)) {
          const [r] = await live.resolve('a', [input]);
          for (const id of r!.linked) links.push({ ...id, svc_id: r!.customerId, born: r!.born });
          for (const loser of r!.merged) merges.push({ loser, survivor: r!.customerId, seq: r!.mergeSeq });
        }
        const rebuilt = new MemoryIdentityIndex();
        expect(await rebuilt.load('a', graphRows(links, merges))).toBe(links.length);
        const ids = all.flat();
        for (const id of ids) expect(await rebuilt.lookup('a', id)).toBe(await live.lookup('a', id));
        for (const id of ids) {
          const c = (await live.lookup('a', id))!;
          expect((await rebuilt.absorbedBy('a', c)).sort()).toEqual((await live.absorbedBy('a', c)).sort());
          expect((await rebuilt.identifiersOf('a', c)).map(identityKey).sort()).toEqual(
            (await live.identifiersOf('a', c)).map(identityKey).sort(),
          );
        }
        // And it goes on alike: the next record sees the same customers, born keys and merge counter.
        const [next] = inputs([[...all[0]!, { kind: 'vuid', value: 'fresh' }]]);
        const probe = { ...next!, seed: 'probe', message: 'probe' };
        expect(await rebuilt.resolve('a', [probe])).toEqual(await live.resolve('a', [probe]));
      }),
      { numRuns: 300 },
    );
  });
});
