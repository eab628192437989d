import { customerIdFromSeed as id } from '@cdp/domain';
import type { IdentityIndex } from './identity-index.port.js';
import type { ProfileState } from './profile-state.port.js';

async function* from<T>(items: T[]): AsyncIterable<T> {
  for (const item of items) yield await Promise.resolve(item);
}

const email = (value: string) => ({ kind: 'email', value });
const vuid = (value: string) => ({ kind: 'vuid', value });

/** Account names unique to this run, since a shared Redis outlives it. */
const run = Math.random().toString(36).slice(2, 8);
const accountNames = ['acc', 'one', 'two'];

/**
 * What every identity-index driver owes the processor and the profile reads. `open` returns an index
 * on which the accounts passed are loaded (warm).
 */
export function identityIndexContract(
  name: string,
  openWarm: (accounts: string[]) => Promise<IdentityIndex>,
): void {
  const open = () => openWarm(accountNames.map((a) => `${a}${run}`));
  describe(`IdentityIndex contract: ${name}`, () => {
    it('creates a customer for unknown identifiers and resolves known ones to it', async () => {
      const index = await open();
      const [first] = await index.resolve(`acc${run}`, [[email('a@x.com'), vuid('v1')]], ['c1']);
      expect(first).toEqual({ customerId: id('c1'), created: true, linked: [email('a@x.com'), vuid('v1')] });
      const [again] = await index.resolve(`acc${run}`, [[vuid('v1')]], ['never']);
      expect(again).toEqual({ customerId: id('c1'), created: false, linked: [] });
      expect(await index.lookup(`acc${run}`, email('a@x.com'))).toBe(id('c1'));
      await index.close();
    });

    it('within one batch, a later record sees what an earlier one created and links new identifiers', async () => {
      const index = await open();
      const out = await index.resolve(
        `acc${run}`,
        [[vuid('v9')], [vuid('v9'), email('b@x.com')], [email('b@x.com')]],
        ['new0', 'new1', 'new2'],
      );
      expect(out.map((r) => r.customerId)).toEqual([id('new0'), id('new0'), id('new0')]);
      expect(out.map((r) => r.created)).toEqual([true, false, false]);
      expect(out[1]!.linked).toEqual([email('b@x.com')]);
      await index.close();
    });

    it('keeps accounts apart', async () => {
      const index = await open();
      await index.resolve(`one${run}`, [[email('same@x.com')]], ['c-one']);
      await index.resolve(`two${run}`, [[email('same@x.com')]], ['c-two']);
      expect(await index.lookup(`one${run}`, email('same@x.com'))).toBe(id('c-one'));
      expect(await index.lookup(`two${run}`, email('same@x.com'))).toBe(id('c-two'));
      await index.close();
    });

    it('loads links read back from the store', async () => {
      const index = await open();
      const n = await index.load(`acc${run}`, from([{ kind: 'email', value: 'z@x.com', svc_id: 'cz' }]));
      expect(n).toBe(1);
      expect(await index.lookup(`acc${run}`, email('z@x.com'))).toBe('cz');
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

    it('loads profiles read back from the store', async () => {
      const state = await open();
      await state.load(`acc${run}`, from([{ svc_id: 'c7', version: 4, attributes: { email: 'q@x.com' } }]));
      const [next] = await state.apply(`acc${run}`, [{ customerId: 'c7', update: { city: 'Rome' } }]);
      expect(next).toEqual({ customerId: 'c7', version: 5, attributes: { email: 'q@x.com', city: 'Rome' } });
      await state.close();
    });
  });
}
