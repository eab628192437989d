import fc from 'fast-check';
import { normalizeProfile, type Attributes } from '@cdp/domain';
import type { ProfileState } from './profile-state.port.js';

/** What a caller may send for the three name fields: a value, '' or null (both unset), or nothing. */
const sentValue = (values: string[]) => fc.option(fc.constantFrom(...values, '', null), { nil: undefined });
/**
 * Given names never equal what first and last name give, so the expected name below does not hinge on
 * a coincidence (that case has its own example).
 */
const sentUpdate = fc.record(
  {
    name: sentValue(['Dr. Who', 'Queen Bee']),
    first_name: sentValue(['Ann', 'Bob']),
    last_name: sentValue(['Lee', 'Ng']),
    city: sentValue(['Oslo']),
  },
  { requiredKeys: [] },
);

type Sent = Record<string, string | null | undefined>;

/**
 * The spec's customer table, read plainly: first and last name are what was last sent for them; the
 * name is the last one sent, else (never sent, or unset since) what first and last name give, or absent.
 */
function expectedNames(sequence: Sent[]): Attributes {
  const last: Record<string, string | undefined> = {};
  for (const sent of sequence)
    for (const field of ['name', 'first_name', 'last_name'])
      if (sent[field] !== undefined) last[field] = sent[field] || undefined;
  const derived = [last.first_name, last.last_name].filter(Boolean).join(' ');
  const expected: Attributes = {};
  if (last.first_name) expected.first_name = last.first_name;
  if (last.last_name) expected.last_name = last.last_name;
  const name = last.name ?? derived;
  if (name) expected.name = name;
  return expected;
}

function namesOf(attributes: Attributes | undefined): Attributes {
  const names: Attributes = {};
  for (const field of ['name', 'first_name', 'last_name'])
    if (attributes?.[field] !== undefined) names[field] = attributes[field]!;
  return names;
}

/** The derived-name rule over any sequence of partial updates, the same on every profile-state driver. */
export function profileNameProperties(driver: string, open: () => Promise<ProfileState>, runs: number): void {
  describe(`ProfileState names: ${driver}`, () => {
    const account = `names${Math.random().toString(36).slice(2, 8)}`;
    let state: ProfileState;
    let customer = 0;
    beforeAll(async () => {
      state = await open();
    });
    afterAll(() => state.close());

    it('name follows first and last name unless one was given, after every update and in one batch alike', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(sentUpdate, { minLength: 1, maxLength: 10 }), async (sequence) => {
          const stepwise = `s${++customer}`;
          const batched = `b${customer}`;
          const updates = sequence.map((sent) => normalizeProfile(sent).attributes);
          for (const [i, update] of updates.entries()) {
            await state.apply(account, [{ customerId: stepwise, update }]);
            const profile = await state.get(account, stepwise);
            expect(namesOf(profile?.attributes)).toEqual(expectedNames(sequence.slice(0, i + 1)));
          }
          await state.apply(
            account,
            updates.map((update) => ({ customerId: batched, update })),
          );
          expect((await state.get(account, batched))?.attributes).toEqual(
            (await state.get(account, stepwise))?.attributes,
          );
        }),
        { numRuns: runs },
      );
    });

    it('a given name equal to what first and last name give follows them from then on', async () => {
      const c = `eq${++customer}`;
      await state.apply(account, [
        { customerId: c, update: { first_name: 'Ann', last_name: 'Lee', name: 'Ann Lee' } },
        { customerId: c, update: { last_name: 'Ng' } },
      ]);
      expect((await state.get(account, c))?.attributes).toEqual({
        first_name: 'Ann',
        last_name: 'Ng',
        name: 'Ann Ng',
      });
    });

    it('a merge derives the name again from the folded parts where it followed them; a given name stays', async () => {
      const [s, l] = [`ms${++customer}`, `ml${customer}`];
      await state.apply(account, [
        { customerId: s, update: normalizeProfile({ first_name: 'Ann' }).attributes },
        { customerId: l, update: normalizeProfile({ first_name: 'Bob', last_name: 'Lee' }).attributes },
      ]);
      await state.apply(account, [{ customerId: s, update: {}, absorb: [l] }]);
      // As one profile given first_name Ann and last_name Lee would read.
      expect((await state.get(account, s))?.attributes).toEqual({
        first_name: 'Ann',
        last_name: 'Lee',
        name: 'Ann Lee',
      });
      const [g, m] = [`gs${++customer}`, `gl${customer}`];
      await state.apply(account, [
        { customerId: g, update: normalizeProfile({ first_name: 'Ann', name: 'Dr Ann' }).attributes },
        { customerId: m, update: normalizeProfile({ first_name: 'Bob', last_name: 'Lee' }).attributes },
      ]);
      await state.apply(account, [{ customerId: g, update: {}, absorb: [m] }]);
      expect((await state.get(account, g))?.attributes).toEqual({
        first_name: 'Ann',
        last_name: 'Lee',
        name: 'Dr Ann',
      });
    });
  });
}
