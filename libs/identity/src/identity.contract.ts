import { customerIdFromSeed as id, type Identifier } from '@cdp/domain';
import type { IdentityGraphRows, IdentityIndex } from './identity-index.port.js';
import type { ProfileState } from './profile-state.port.js';
import { MAX_MERGE, bornKey, type ResolveInput, type Resolution } from './resolution.js';

async function* from<T>(items: T[]): AsyncIterable<T> {
  for (const item of items) yield await Promise.resolve(item);
}

export function graphRows(
  links: { kind: string; value: string; svc_id: string; born: string }[],
  merges: { loser: string; survivor: string; seq: number }[] = [],
  borns: { svc_id: string; born: string }[] = [],
): IdentityGraphRows {
  return { links: from(links), borns: from(borns), merges: from(merges) };
}

const email = (value: string) => ({ kind: 'email', value });
const vuid = (value: string) => ({ kind: 'vuid', value });
const cid = (value: string) => ({ kind: 'customer_id', value });

let accepted = 1_000_000;
/** A record of its own message, accepted later than every record made before it. */
export function record(ids: Identifier[], seed: string, message = `m-${seed}`, index = 0): ResolveInput {
  return { ids, seed, born: bornKey(accepted++), message, index };
}

/** Every order of these items. */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((first, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [first, ...rest]),
  );
}

/** The rows the processor would store for these resolutions (IdentityStep.addEffectRows), as a rebuild reads them. */
function storedRows(resolutions: Resolution[]): IdentityGraphRows {
  const links = resolutions.flatMap((r) =>
    r.linked.map((l) => ({ ...l, svc_id: r.customerId, born: r.born })),
  );
  const borns = resolutions
    .filter((r) => r.born !== '' && r.linked.length === 0)
    .map((r) => ({ svc_id: r.customerId, born: r.born }));
  const merges = resolutions.flatMap((r) =>
    r.merged.map((loser) => ({ loser, survivor: r.customerId, seq: r.mergeSeq })),
  );
  return graphRows(links, merges, borns);
}

/** Account names unique to this run, since a shared Redis outlives it. */
const run = Math.random().toString(36).slice(2, 8);
const accountNames = ['acc', 'one', 'two', 'mrg', 'cnf', 'lim', 'mem', 'chn', 'low'];

/**
 * What every identity-index driver owes the processor and the profile reads. `openWarm` returns an
 * index on which the accounts passed are loaded (warm).
 */
export function identityIndexContract(
  name: string,
  openWarm: (accounts: string[]) => Promise<IdentityIndex>,
): void {
  const open = () => openWarm(accountNames.map((a) => `${a}${run}`));
  describe(`IdentityIndex contract: ${name}`, () => {
    it('creates a customer for unknown identifiers and resolves known ones to it', async () => {
      const index = await open();
      const [first] = await index.resolve(`acc${run}`, [record([email('a@x.com'), vuid('v1')], 'c1')]);
      expect(first).toMatchObject({
        customerId: id('c1'),
        created: true,
        linked: [email('a@x.com'), vuid('v1')],
        merged: [],
        conflicts: [],
      });
      const [again] = await index.resolve(`acc${run}`, [record([vuid('v1')], 'never')]);
      expect(again).toMatchObject({ customerId: id('c1'), created: false, linked: [], born: '' });
      expect(first!.born).not.toBe('');
      expect(await index.lookup(`acc${run}`, email('a@x.com'))).toBe(id('c1'));
      await index.close();
    });

    it('within one batch, a later record sees what an earlier one created and links new identifiers', async () => {
      const index = await open();
      const out = await index.resolve(`acc${run}`, [
        record([vuid('v9')], 'new0', 'mb', 0),
        record([vuid('v9'), email('b@x.com')], 'new1', 'mb', 1),
        record([email('b@x.com')], 'new2', 'mb', 2),
      ]);
      expect(out.map((r) => r.customerId)).toEqual([id('new0'), id('new0'), id('new0')]);
      expect(out.map((r) => r.created)).toEqual([true, false, false]);
      expect(out[1]!.linked).toEqual([email('b@x.com')]);
      await index.close();
    });

    it('keeps accounts apart', async () => {
      const index = await open();
      await index.resolve(`one${run}`, [record([email('same@x.com')], 'c-one')]);
      await index.resolve(`two${run}`, [record([email('same@x.com')], 'c-two')]);
      expect(await index.lookup(`one${run}`, email('same@x.com'))).toBe(id('c-one'));
      expect(await index.lookup(`two${run}`, email('same@x.com'))).toBe(id('c-two'));
      await index.close();
    });

    it('merges two customers a record joins: the older survives and takes the other identifiers', async () => {
      const index = await open();
      const a = `mrg${run}`;
      await index.resolve(a, [record([email('old@x.com')], 'old')]);
      await index.resolve(a, [record([vuid('young')], 'young')]);
      const [r] = await index.resolve(a, [record([vuid('young'), email('old@x.com'), vuid('third')], 'x')]);
      expect(r).toMatchObject({
        customerId: id('old'),
        created: false,
        merged: [id('young')],
        conflicts: [],
      });
      expect(r!.linked).toEqual([vuid('third')]);
      expect(r!.mergeSeq).toBeGreaterThan(0);
      expect(await index.lookup(a, vuid('young'))).toBe(id('old'));
      const ids = await index.identifiersOf(a, id('young'));
      expect(ids).toEqual(expect.arrayContaining([email('old@x.com'), vuid('young'), vuid('third')]));
      expect(ids).toHaveLength(3);
      await index.close();
    });

    it('a low-confidence identifier attaches a record to its customer but never merges two known ones', async () => {
      const index = await open();
      const a = `low${run}`;
      const device = (value: string) => ({ kind: 'device_hash', value });
      const lowRecord = (ids: Identifier[], seed: string) => ({
        ...record(ids, seed),
        low: ids.flatMap((i, n) => (i.kind === 'device_hash' ? [n] : [])),
      });
      await index.resolve(a, [lowRecord([email('ann@x.com'), device('d1')], 'ann')]);
      await index.resolve(a, [lowRecord([email('bob@x.com')], 'bob')]);
      // Bob's email is known: the shared device leaves Ann alone (no merge, no conflict, not linked).
      const [r] = await index.resolve(a, [lowRecord([email('bob@x.com'), device('d1')], 'x')]);
      expect(r).toMatchObject({ customerId: id('bob'), merged: [], conflicts: [], linked: [] });
      expect(await index.lookup(a, device('d1'))).toBe(id('ann'));
      // A record known by the device alone is Ann's, and what else it carries is linked to her.
      const [s] = await index.resolve(a, [lowRecord([vuid('new-v'), device('d1')], 'y')]);
      expect(s).toMatchObject({ customerId: id('ann'), created: false, merged: [], linked: [vuid('new-v')] });
      await index.close();
    });

    it('never merges two customers with different customer_id values, and reports the conflict', async () => {
      const index = await open();
      const a = `cnf${run}`;
      await index.resolve(a, [record([cid('A'), email('shared@x.com')], 'ca')]);
      await index.resolve(a, [record([cid('B')], 'cb')]);
      const [r] = await index.resolve(a, [record([cid('B'), email('shared@x.com'), vuid('vb')], 'x')]);
      expect(r).toMatchObject({
        customerId: id('cb'),
        merged: [],
        conflicts: [{ customerId: id('ca'), reason: 'customer_id' }],
        linked: [vuid('vb')],
      });
      expect(await index.lookup(a, email('shared@x.com'))).toBe(id('ca'));
      // An unknown customer_id with another customer's email: a new customer, never a second customer_id.
      const [n] = await index.resolve(a, [record([cid('C'), email('shared@x.com')], 'cc')]);
      expect(n).toMatchObject({ customerId: id('cc'), created: true, linked: [cid('C')] });
      expect(n!.conflicts).toEqual([{ customerId: id('ca'), reason: 'customer_id' }]);
      await index.close();
    });

    it(`joins at most ${MAX_MERGE} customers in one merge: the record's anchor and the oldest others`, async () => {
      const index = await open();
      const a = `lim${run}`;
      const n = MAX_MERGE + 2;
      for (let i = 0; i < n; i++) await index.resolve(a, [record([vuid(`l${i}`)], `l${i}`)]);
      const ids = Array.from({ length: n }, (_, i) => vuid(`l${n - 1 - i}`)); // the youngest first: the anchor
      const [r] = await index.resolve(a, [record(ids, 'x')]);
      expect(r!.customerId).toBe(id('l0'));
      expect(r!.merged).toHaveLength(MAX_MERGE - 1);
      expect(r!.merged).toContain(id(`l${n - 1}`));
      expect(r!.conflicts).toEqual([
        { customerId: id(`l${n - 2}`), reason: 'merge_limit' },
        { customerId: id(`l${n - 3}`), reason: 'merge_limit' },
      ]);
      expect(await index.lookup(a, vuid(`l${n - 2}`))).toBe(id(`l${n - 2}`));
      await index.close();
    });

    it('a merged customer merged again takes the customers merged into it along', async () => {
      const index = await open();
      const a = `chn${run}`;
      await index.resolve(a, [record([email('c@x.com')], 'c')]);
      await index.resolve(a, [record([email('b@x.com')], 'b')]);
      await index.resolve(a, [record([email('a@x.com')], 'a')]);
      const [first] = await index.resolve(a, [record([email('a@x.com'), email('b@x.com')], 'x1')]);
      expect(first!.merged).toEqual([id('a')]);
      const [second] = await index.resolve(a, [record([email('b@x.com'), email('c@x.com')], 'x2')]);
      expect(second!.customerId).toBe(id('c'));
      expect(second!.merged.sort()).toEqual([id('a'), id('b')].sort());
      expect(second!.mergeSeq).toBeGreaterThan(first!.mergeSeq);
      expect(await index.lookup(a, email('a@x.com'))).toBe(id('c'));
      expect((await index.absorbedBy(a, id('c'))).sort()).toEqual([id('a'), id('b')].sort());
      expect(await index.absorbedBy(a, id('b'))).toEqual([]);
      // find answers both at once, from any of the merged customers' identifiers.
      for (const e of ['a@x.com', 'b@x.com', 'c@x.com']) {
        const found = await index.find(a, email(e));
        expect({ ...found, absorbed: found?.absorbed.sort() }).toEqual({
          customerId: id('c'),
          absorbed: [id('a'), id('b')].sort(),
        });
      }
      await index.resolve(a, [record([email('d@x.com')], 'd')]);
      expect(await index.find(a, email('d@x.com'))).toEqual({ customerId: id('d'), absorbed: [] });
      expect(await index.find(a, email('nobody@x.com'))).toBeUndefined();
      await index.close();
    });

    it('gives a message the same resolutions until it is settled, so its effects reach the store once', async () => {
      const index = await open();
      const a = `mem${run}`;
      const batch = [
        record([email('r@x.com')], 'r', 'mr', 0),
        record([email('r@x.com'), vuid('rv')], 'r2', 'mr', 1),
      ];
      const first = await index.resolve(a, batch);
      expect(await index.resolve(a, batch)).toEqual(first); // redelivered before the store held it
      await index.settle(a, ['mr']);
      const after = await index.resolve(a, batch);
      expect(after.map((r) => [r.customerId, r.created, r.linked.length])).toEqual([
        [id('r'), false, 0],
        [id('r'), false, 0],
      ]);
      await index.close();
    });

    it('a customer is as old as its first accepted record: the same one survives a merge in any processing order', async () => {
      // Accepted in this order: A1 {email a}, B {email b}, A2 {email a, vuid a2}; then M {email a, email b}
      // merges the two customers. One processor taking them in that order keeps a's customer (born at
      // A1) and merges b's into it. Here A1, B and A2 are processed in every order; A2 before A1 makes
      // a's customer c(A2), which A1 (accepted before B) must make older than b's.
      const at = (n: number) => bornKey(2_000_000 + n);
      const rec = (tag: string, ids: Identifier[], n: number): ResolveInput => ({
        ids,
        seed: `${run}-${tag}`,
        born: at(n),
        message: `${run}-${tag}`,
        index: 0,
      });
      const a1 = rec('a1', [email('a@p.com')], 1);
      const b = rec('b', [email('b@p.com')], 2);
      const a2 = rec('a2', [email('a@p.com'), vuid('a2')], 3);
      const m = rec('m', [email('a@p.com'), email('b@p.com')], 4);
      const orders = permutations([a1, b, a2]);
      const accounts = orders.flatMap((_, i) => [`prm${i}${run}`, `prr${i}${run}`]);
      const index = await openWarm(accounts);
      for (const [i, order] of orders.entries()) {
        const account = `prm${i}${run}`;
        const resolutions: Resolution[] = [];
        for (const r of order) resolutions.push(...(await index.resolve(account, [r])));
        const aCustomer = await index.lookup(account, email('a@p.com'));
        const bCustomer = await index.lookup(account, email('b@p.com'));
        // A record accepted before its customer's others gives back the lowered born key (stored alone).
        const first = resolutions[order.indexOf(a1)]!;
        if (order.indexOf(a2) < order.indexOf(a1))
          expect(first).toMatchObject({ customerId: aCustomer, linked: [], born: at(1) });
        // The same graph rebuilt from what the store would hold of it ages its customers alike.
        const rebuilt = `prr${i}${run}`;
        await index.load(rebuilt, storedRows(resolutions));
        for (const acc of [account, rebuilt]) {
          const [merge] = await index.resolve(acc, [{ ...m, message: `${m.message}-${acc}` }]);
          expect({
            order: order.map((r) => r.seed),
            survivor: merge!.customerId,
            merged: merge!.merged,
          }).toEqual({
            order: order.map((r) => r.seed),
            survivor: aCustomer,
            merged: [bCustomer],
          });
          expect(await index.lookup(acc, vuid('a2'))).toBe(aCustomer);
        }
      }
      await index.close();
    });

    it('loads the graph read back from the store, merges included', async () => {
      const index = await open();
      const a = `acc${run}`;
      const n = await index.load(
        a,
        graphRows(
          [
            { kind: 'email', value: 'z@x.com', svc_id: 'cz', born: '1' },
            { kind: 'vuid', value: 'zv', svc_id: 'cy', born: '2' },
            { kind: 'vuid', value: 'zw', svc_id: 'cx', born: '3' },
          ],
          [
            { loser: 'cx', survivor: 'cy', seq: 1 },
            { loser: 'cy', survivor: 'cz', seq: 2 },
            { loser: 'cx', survivor: 'cz', seq: 2 },
          ],
        ),
      );
      expect(n).toBe(3);
      expect(await index.lookup(a, email('z@x.com'))).toBe('cz');
      expect(await index.lookup(a, vuid('zw'))).toBe('cz');
      expect((await index.identifiersOf(a, 'cx')).length).toBe(3);
      const [r] = await index.resolve(a, [record([vuid('zw'), vuid('new')], 'q')]);
      expect(r).toMatchObject({ customerId: 'cz', born: '1', linked: [vuid('new')] });
      await index.close();
    });
  });
}

/** What every profile-state driver owes. */
export function profileStateContract(name: string, open: () => Promise<ProfileState>): void {
  describe(`ProfileState contract: ${name}`, () => {
    it('applies additive updates in order, null unsets, and counts versions', async () => {
      const state = await open();
      const out = await state.apply(`acc${run}`, [
        { customerId: 'c1', update: { email: 'a@x.com', name: 'A' } },
        { customerId: 'c1', update: { name: null, city: 'Oslo' } },
        { customerId: 'c2', update: {} },
      ]);
      expect(out).toEqual([
        { customerId: 'c1', version: 2, attributes: { email: 'a@x.com', city: 'Oslo' } },
        { customerId: 'c2', version: 1, attributes: {} },
      ]);
      expect(await state.get(`acc${run}`, 'c1')).toEqual(out[0]);
      expect(await state.get(`other${run}`, 'c1')).toBeUndefined();
      await state.close();
    });

    it('merges a profile into its survivor: the survivor keeps its values, gaps are filled, the loser is gone', async () => {
      const state = await open();
      const a = `mrg${run}`;
      await state.apply(a, [
        { customerId: 's', update: { email: 's@x.com', city: 'Oslo' } },
        { customerId: 'l', update: { email: 'l@x.com', phone: '123', city: 'Rome' } },
        { customerId: 'l', update: { zip: '1' } },
      ]);
      const out = await state.apply(a, [
        { customerId: 's', update: { name: 'S' }, absorb: ['l', 'never-seen'] },
      ]);
      expect(out).toEqual([
        {
          customerId: 'l',
          version: 3,
          attributes: { email: 'l@x.com', phone: '123', city: 'Rome', zip: '1' },
          mergedInto: 's',
        },
        {
          customerId: 's',
          version: 2,
          attributes: { email: 's@x.com', city: 'Oslo', phone: '123', zip: '1', name: 'S' },
        },
      ]);
      expect(await state.get(a, 'l')).toBeUndefined();
      await state.close();
    });

    it('a read given the customers merged into one answers the whole merge, folded or not yet', async () => {
      const state = await open();
      const a = `rdm${run}`;
      await state.apply(a, [
        { customerId: 's', update: { email: 's@x.com', city: 'Oslo' } },
        { customerId: 'l', update: { email: 'l@x.com', phone: '123', city: 'Rome', zip: '1' } },
        { customerId: 'r', update: { email: 'r@x.com' }, redact: true },
      ]);
      const whole = { email: 's@x.com', city: 'Oslo', phone: '123', zip: '1' };
      // The identity index has merged l into s; the fold is not applied yet.
      expect(await state.get(a, 's', ['l', 'never-seen'])).toEqual({
        customerId: 's',
        version: 1,
        attributes: whole,
      });
      expect(await state.get(a, 's')).toEqual({
        customerId: 's',
        version: 1,
        attributes: { email: 's@x.com', city: 'Oslo' },
      });
      expect(await state.get(a, 's', ['l', 'r'])).toEqual({
        customerId: 's',
        version: 1,
        attributes: { opted_in: false },
        redacted: true,
      });
      const [, folded] = await state.apply(a, [{ customerId: 's', update: {}, absorb: ['l'] }]);
      expect(folded!.attributes).toEqual(whole);
      expect(await state.get(a, 's', ['l'])).toEqual(folded);
      expect(await state.get(a, 'never-seen', ['l'])).toBeUndefined();
      await state.close();
    });

    it('absorbing a profile merged away already (a retried write) gives the same merged row again', async () => {
      const state = await open();
      const a = `mrg2${run}`;
      await state.apply(a, [
        { customerId: 's', update: { email: 's@x.com' } },
        { customerId: 'l', update: { customer_id: 'l-1', first_name: 'Lo' } },
      ]);
      const merge = { customerId: 's', update: { customer_id: 'l-1' }, absorb: ['l'] };
      const first = await state.apply(a, [merge]);
      // The store write after it failed (or the process died before it): the batch is applied again.
      const again = await state.apply(a, [merge]);
      const loserRow = {
        customerId: 'l',
        version: 2,
        attributes: { customer_id: 'l-1', first_name: 'Lo', name: 'Lo' },
        mergedInto: 's',
      };
      expect(first[0]).toEqual(loserRow);
      expect(again[0]).toEqual(loserRow);
      expect(again[1]).toMatchObject({
        customerId: 's',
        attributes: { email: 's@x.com', customer_id: 'l-1', first_name: 'Lo', name: 'Lo' },
      });
      expect(await state.get(a, 'l')).toBeUndefined();
      await state.close();
    });

    it('loads profiles read back from the store', async () => {
      const state = await open();
      await state.load(`acc${run}`, from([{ svc_id: 'c7', version: 4, attributes: { email: 'q@x.com' } }]));
      const [next] = await state.apply(`acc${run}`, [{ customerId: 'c7', update: { city: 'Rome' } }]);
      expect(next).toEqual({ customerId: 'c7', version: 5, attributes: { email: 'q@x.com', city: 'Rome' } });
      await state.close();
    });

    it('keeps an exact phone index under set, change, unset, merge and load', async () => {
      const state = await open();
      const a = `ph${run}`;
      await state.apply(a, [
        { customerId: 'p1', update: { phone: '+1 555 0100' } },
        { customerId: 'p2', update: { phone: '+1 555 0100', email: 'p2@x.com' } },
        { customerId: 'p3', update: { phone: '+15550100' } },
      ]);
      expect(await state.customersWithPhone(a, '+1 555 0100')).toEqual(['p1', 'p2']);
      expect(await state.customersWithPhone(a, '+15550100')).toEqual(['p3']);
      expect(await state.customersWithPhone(a, '+1 555 010')).toEqual([]);
      await state.apply(a, [
        { customerId: 'p1', update: { phone: '999' } },
        { customerId: 'p2', update: { phone: null } },
      ]);
      expect(await state.customersWithPhone(a, '+1 555 0100')).toEqual([]);
      expect(await state.customersWithPhone(a, '999')).toEqual(['p1']);
      // p3 merges into p2 (no phone): p2 takes p3's phone, p3 is gone.
      await state.apply(a, [{ customerId: 'p2', update: {}, absorb: ['p3'] }]);
      expect(await state.customersWithPhone(a, '+15550100')).toEqual(['p2']);
      // p1 (phone 999) merges into p2 (which keeps its own phone): 999 is nobody's any more.
      await state.apply(a, [{ customerId: 'p2', update: {}, absorb: ['p1'] }]);
      expect(await state.customersWithPhone(a, '999')).toEqual([]);
      await state.load(
        a,
        from([
          { svc_id: 'q1', version: 1, attributes: { phone: '777' } },
          { svc_id: 'q2', version: 1, attributes: { phone: '777' } },
        ]),
      );
      expect(await state.customersWithPhone(a, '777')).toEqual(['q1', 'q2']);
      expect(await state.customersWithPhone(a, '+15550100')).toEqual([]);
      await state.close();
    });

    it('redacts a profile: personal fields gone, opted_in false, later updates change opted_in only', async () => {
      const state = await open();
      const a = `red${run}`;
      await state.apply(a, [
        {
          customerId: 'r',
          update: { email: 'r@x.com', name: 'R', phone: '42', opted_in: true, tier: 'gold' },
        },
      ]);
      const [redacted] = await state.apply(a, [{ customerId: 'r', update: {}, redact: true }]);
      expect(redacted).toEqual({
        customerId: 'r',
        version: 2,
        attributes: { opted_in: false },
        redacted: true,
      });
      expect(await state.customersWithPhone(a, '42')).toEqual([]);
      const [later] = await state.apply(a, [
        { customerId: 'r', update: { email: 'r@x.com', name: 'Again', phone: '42', city: 'Oslo' } },
      ]);
      expect(later).toEqual({ customerId: 'r', version: 3, attributes: { opted_in: false }, redacted: true });
      const [optedIn] = await state.apply(a, [{ customerId: 'r', update: { opted_in: true, name: 'X' } }]);
      expect(optedIn!.attributes).toEqual({ opted_in: true });
      expect(await state.get(a, 'r')).toEqual(optedIn);
      expect(await state.customersWithPhone(a, '42')).toEqual([]);
      // Redacting it again (a record of a pooled identifier) keeps that explicit opt-in.
      const [again] = await state.apply(a, [{ customerId: 'r', update: { email: 'r@x.com' }, redact: true }]);
      expect(again!.attributes).toEqual({ opted_in: true });
      // A customer born redacted (an identifier of the opt-out pool) never holds the data it came with.
      const [born] = await state.apply(a, [{ customerId: 'n', update: { email: 'n@x.com' }, redact: true }]);
      expect(born).toEqual({ customerId: 'n', version: 1, attributes: { opted_in: false }, redacted: true });
      await state.close();
    });

    it('a survivor absorbing a redacted profile is redacted, and so is a redacted survivor absorbing another', async () => {
      const state = await open();
      const a = `rmg${run}`;
      await state.apply(a, [
        { customerId: 's1', update: { email: 's1@x.com', phone: '1' } },
        { customerId: 'l1', update: { email: 'l1@x.com' } },
        { customerId: 'l1', update: {}, redact: true },
        { customerId: 's2', update: { email: 's2@x.com' } },
        { customerId: 's2', update: {}, redact: true },
        { customerId: 'l2', update: { email: 'l2@x.com', name: 'L2', phone: '2' } },
      ]);
      const out = await state.apply(a, [
        { customerId: 's1', update: { name: 'S1' }, absorb: ['l1'] },
        { customerId: 's2', update: { city: 'Rome' }, absorb: ['l2'] },
      ]);
      expect(out.find((s) => s.customerId === 's1')).toEqual({
        customerId: 's1',
        version: 2,
        attributes: { opted_in: false },
        redacted: true,
      });
      expect(out.find((s) => s.customerId === 's2')).toEqual({
        customerId: 's2',
        version: 3,
        attributes: { opted_in: false },
        redacted: true,
      });
      expect(out.find((s) => s.customerId === 'l1')).toMatchObject({ mergedInto: 's1', redacted: true });
      expect(await state.get(a, 'l2')).toBeUndefined();
      expect(await state.customersWithPhone(a, '1')).toEqual([]);
      expect(await state.customersWithPhone(a, '2')).toEqual([]);
      await state.close();
    });

    it('loads redacted profiles and keeps honouring the redaction', async () => {
      const state = await open();
      const a = `rld${run}`;
      await state.load(
        a,
        from([{ svc_id: 'x', version: 3, attributes: { opted_in: false }, redacted: true }]),
      );
      const [next] = await state.apply(a, [{ customerId: 'x', update: { email: 'x@x.com' } }]);
      expect(next).toEqual({ customerId: 'x', version: 4, attributes: { opted_in: false }, redacted: true });
      await state.close();
    });

    it('writes each field by acceptance order (`at`): a late or redelivered update never overwrites a newer one', async () => {
      const state = await open();
      const a = `ord${run}`;
      // Processors applied v3 first, then the older v2 (a redelivery, or another processor's late batch).
      await state.apply(a, [{ customerId: 'c', update: { first_name: 'v3', city: 'Oslo' }, at: 3_000 }]);
      const [late] = await state.apply(a, [
        { customerId: 'c', update: { first_name: 'v2', city: null, email: 'c@x.com' }, at: 2_000 },
      ]);
      // The fields v3 wrote keep its values; a field v3 left alone takes v2's.
      expect(late!.attributes).toEqual({ first_name: 'v3', name: 'v3', city: 'Oslo', email: 'c@x.com' });
      // An unset is a write too: an older value does not come back after it.
      await state.apply(a, [{ customerId: 'c', update: { city: null }, at: 4_000 }]);
      await state.apply(a, [{ customerId: 'c', update: { city: 'Rome' }, at: 3_500 }]);
      expect((await state.get(a, 'c'))!.attributes.city).toBeUndefined();
      // Beyond 2^32 and 14 digits (a stream sequence × 1000): compared exactly.
      await state.apply(a, [{ customerId: 'c', update: { last_name: 'B' }, at: 12_345_678_901_235 }]);
      await state.apply(a, [{ customerId: 'c', update: { last_name: 'A' }, at: 12_345_678_901_234 }]);
      expect((await state.get(a, 'c'))!.attributes.last_name).toBe('B');
      await state.close();
    });

    it('folds a merge field by field in acceptance order: the later write wins on either side', async () => {
      const state = await open();
      const a = `mfo${run}`;
      // B's update at 200 was applied before the merge at 150 that absorbs B into A (another processor,
      // or a retry): its value must survive the merge. A's own later writes win over B's older ones.
      await state.apply(a, [
        { customerId: 'A', update: { first_name: 'A1', city: 'Oslo', zip: '1' }, at: 100 },
        { customerId: 'A', update: { email: 'a@x.com' }, at: 250 },
        { customerId: 'B', update: { first_name: 'B2', city: null, email: 'b@x.com', phone: '9' }, at: 200 },
        { customerId: 'B', update: { zip: '2' }, at: 90 },
      ]);
      const expected = {
        first_name: 'B2', // B's 200 beats A's 100
        name: 'B2', // follows the folded parts
        email: 'a@x.com', // A's 250 beats B's 200
        phone: '9', // only B has it
        zip: '1', // A's 100 beats B's 90
        // city: B unset it at 200, after A's 100
      };
      // Read before the fold (the identity index has merged already) and after it: the same.
      expect((await state.get(a, 'A', ['B']))!.attributes).toEqual(expected);
      const out = await state.apply(a, [
        { customerId: 'A', update: { last_name: 'Z' }, absorb: ['B'], at: 150 },
      ]);
      const survivor = out.find((s) => s.customerId === 'A')!;
      expect(survivor.attributes).toEqual({ ...expected, last_name: 'Z', name: 'B2 Z' });
      expect(survivor.times).toMatchObject({
        first_name: 200,
        city: 200,
        email: 250,
        zip: 100,
        last_name: 150,
      });
      // Folded in the other direction (B survives A), the same fields win: the order decides, not the survivor.
      const b = `mfr${run}`;
      await state.apply(b, [
        { customerId: 'A', update: { first_name: 'A1', city: 'Oslo', zip: '1' }, at: 100 },
        { customerId: 'A', update: { email: 'a@x.com' }, at: 250 },
        { customerId: 'B', update: { first_name: 'B2', city: null, email: 'b@x.com', phone: '9' }, at: 200 },
        { customerId: 'B', update: { zip: '2' }, at: 90 },
        { customerId: 'B', update: {}, absorb: ['A'], at: 150 },
      ]);
      expect((await state.get(b, 'B'))!.attributes).toEqual(expected);
      // A later update older than the folded fields' times changes none of them.
      await state.apply(a, [{ customerId: 'A', update: { first_name: 'old', phone: '0' }, at: 120 }]);
      expect((await state.get(a, 'A'))!.attributes).toMatchObject({ first_name: 'B2', phone: '9' });
      await state.close();
    });

    it('in a fold, a value with no time only fills a gap, and a given name is folded like any field', async () => {
      const state = await open();
      const a = `mfu${run}`;
      await state.apply(a, [
        { customerId: 'A', update: { city: 'Oslo', name: 'Boss' } }, // no time (no bus record orders it)
        { customerId: 'B', update: { city: 'Rome', zip: '2', first_name: 'Bo' } },
        { customerId: 'B', update: { name: 'Bob B' }, at: 50 },
      ]);
      const [, folded] = await state.apply(a, [{ customerId: 'A', update: {}, absorb: ['B'] }]);
      expect(folded!.attributes).toEqual({ city: 'Oslo', zip: '2', first_name: 'Bo', name: 'Bob B' });
      await state.close();
    });

    it('gives back the field times with a snapshot and keeps them across a load (a rebuild)', async () => {
      const state = await open();
      const a = `tld${run}`;
      const [snap] = await state.apply(a, [
        { customerId: 'c', update: { first_name: 'v9', city: null }, at: 9_000 },
      ]);
      expect(snap!.times).toEqual({ first_name: 9_000, city: 9_000 });
      await state.load(
        a,
        from([{ svc_id: 'c', version: snap!.version, attributes: snap!.attributes, times: snap!.times }]),
      );
      await state.apply(a, [
        { customerId: 'c', update: { first_name: 'v8', city: 'Oslo', email: 'c@x.com' }, at: 8_000 },
      ]);
      expect((await state.get(a, 'c'))!.attributes).toEqual({
        first_name: 'v9',
        name: 'v9',
        email: 'c@x.com',
      });
      await state.close();
    });

    it('any application order of the same updates ends in the same profile, a redaction after them included', async () => {
      const state = await open();
      const values = ['v1', 'v2', null, 'v3'];
      const updates = Array.from({ length: 48 }, (_, i) => {
        const update: Record<string, string | boolean | null> = {
          first_name: values[i % 4]!,
          [i % 3 ? 'city' : 'last_name']: values[(i + 1) % 4]!,
        };
        if (i % 5 === 0) update.opted_in = i % 2 === 0;
        return { customerId: `c${i % 3}`, update, at: (i + 1) * 1000 + (i % 7) };
      });
      const redact = { customerId: 'c1', update: {}, redact: true };
      const shuffled = [...updates].sort((x, y) => ((x.at * 7919) % 101) - ((y.at * 7919) % 101));
      const a = `ino${run}`;
      const b = `shf${run}`;
      await state.apply(a, [...updates, redact]);
      // In batches, one by one, reversed, and an old update redelivered after the redaction.
      await state.apply(b, shuffled.slice(0, 20));
      for (const u of shuffled.slice(20, 30)) await state.apply(b, [u]);
      await state.apply(b, shuffled.slice(30, 40).reverse());
      await state.apply(b, [...shuffled.slice(40), redact, ...updates.slice(0, 6)]);
      for (const c of ['c0', 'c1', 'c2']) {
        const x = await state.get(a, c);
        const y = await state.get(b, c);
        expect({ c, attributes: y!.attributes, redacted: y!.redacted }).toEqual({
          c,
          attributes: x!.attributes,
          redacted: x!.redacted,
        });
      }
      expect((await state.get(a, 'c1'))!.redacted).toBe(true);
      await state.close();
    });

    it('keeps an opt-out pool per account, rebuildable', async () => {
      const state = await open();
      const a = `pool${run}`;
      await state.addToOptOutPool(a, [email('gone@x.com'), vuid('gv')]);
      expect(await state.inOptOutPool(a, [email('gone@x.com'), email('here@x.com'), vuid('gv')])).toEqual([
        email('gone@x.com'),
        vuid('gv'),
      ]);
      expect(await state.inOptOutPool(`other${run}`, [email('gone@x.com')])).toEqual([]);
      expect(await state.loadOptOutPool(a, from([email('back@x.com')]))).toBe(1);
      expect(await state.inOptOutPool(a, [email('gone@x.com'), email('back@x.com')])).toEqual([
        email('back@x.com'),
      ]);
      await state.close();
    });
  });
}
