import fc from 'fast-check';
import { customerIdFromSeed, identityKey, type Identifier } from '@cdp/domain';
import type { IdentityIndex } from './identity-index.port.js';
import { MAX_MERGE, bornKey, type ResolveInput, type Resolution } from './resolution.js';

/**
 * The reference model of the identity rules: a list of customers scanned naively, the rules written as
 * plainly as they are stated in resolution.ts. The drivers must agree with it record for record.
 */
class ReferenceModel {
  private readonly customers: {
    id: string;
    born: string;
    ids: Set<string>;
    cid?: string;
    into?: string;
  }[] = [];
  private seq = 0;

  private live(id: string) {
    return this.customers.find((c) => c.id === id && c.into === undefined)!;
  }

  ownerOf(key: string): string | undefined {
    return this.customers.find((c) => c.into === undefined && c.ids.has(key))?.id;
  }

  apply(rec: ResolveInput): Omit<Resolution, 'born'> {
    const keys = rec.ids.map(identityKey);
    const owners = keys.map((k) => this.ownerOf(k));
    const low = new Set(rec.low ?? []);
    const high = [...new Set(owners.filter((o, i): o is string => o !== undefined && !low.has(i)))];
    const firstLow = owners.find((o, i) => o !== undefined && low.has(i));
    // Low-confidence identifiers count only when the others know nobody.
    const known = high.length === 0 && firstLow !== undefined ? [firstLow] : high;
    const cidAt = rec.ids.findIndex((i) => i.kind === 'customer_id');
    const anchor = cidAt >= 0 ? owners[cidAt] : known[0];
    const target =
      (cidAt >= 0 ? rec.ids[cidAt]!.value : undefined) ??
      (anchor ? this.live(anchor).cid : undefined) ??
      known.map((k) => this.live(k).cid).find(Boolean);
    const older = (a: string, b: string) => {
      const [x, y] = [this.live(a).born, this.live(b).born];
      return x === y ? (a < b ? -1 : 1) : x < y ? -1 : 1;
    };
    let joined = known.filter((k) => [undefined, target].includes(this.live(k).cid));
    const conflicts: Resolution['conflicts'] = known
      .filter((k) => !joined.includes(k))
      .map((customerId) => ({ customerId, reason: 'customer_id' as const }));
    if (joined.length > MAX_MERGE) {
      const others = joined.filter((k) => k !== anchor).sort(older);
      const kept = (anchor ? [anchor] : []).concat(others).slice(0, MAX_MERGE);
      conflicts.push(
        ...joined
          .filter((k) => !kept.includes(k))
          .map((customerId) => ({ customerId, reason: 'merge_limit' as const })),
      );
      joined = kept;
    }
    const merged: string[] = [];
    let mergeSeq = 0;
    let survivor: string;
    if (joined.length === 0) {
      survivor = customerIdFromSeed(rec.seed);
      this.customers.push({ id: survivor, born: rec.born, ids: new Set() });
    } else {
      joined.sort(older);
      survivor = joined[0]!;
      if (joined.length > 1) mergeSeq = ++this.seq;
      for (const loser of joined.slice(1)) {
        const l = this.live(loser);
        const s = this.live(survivor);
        for (const k of l.ids) s.ids.add(k);
        s.cid ??= l.cid;
        for (const c of this.customers) {
          if (c.id === loser || c.into === loser) {
            c.into = survivor;
            merged.push(c.id);
          }
        }
      }
    }
    const s = this.live(survivor);
    const linked: Identifier[] = [];
    rec.ids.forEach((id, i) => {
      if (owners[i] !== undefined) return;
      s.ids.add(keys[i]!);
      if (id.kind === 'customer_id') s.cid ??= id.value;
      linked.push(id);
    });
    return { customerId: survivor, created: joined.length === 0, linked, merged, mergeSeq, conflicts };
  }
}

/** A custom identifier of low merge confidence: it never merges two known customers. */
const LOW_KIND = 'device_hash';
const lowPositions = (ids: Identifier[]) => ids.flatMap((id, i) => (id.kind === LOW_KIND ? [i] : []));

/** A small universe of identifiers, so that records collide, merge and conflict often. */
const identifier = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom('A', 'B', 'C').map((value) => ({ kind: 'customer_id', value })) },
  {
    weight: 3,
    arbitrary: fc.integer({ min: 0, max: 5 }).map((i) => ({ kind: 'email', value: `e${i}@x.com` })),
  },
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 7 }).map((i) => ({ kind: 'vuid', value: `v${i}` })) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 0, max: 2 }).map((i) => ({ kind: 'svc_alias_cart', value: `k${i}` })),
  },
  {
    weight: 2,
    arbitrary: fc.integer({ min: 0, max: 2 }).map((i) => ({ kind: LOW_KIND, value: `d${i}` })),
  },
);
/** A record's identifiers as the domain hands them over: distinct, one customer_id at most, ranked. */
const recordIds = (withCustomerIds: boolean) =>
  fc
    .uniqueArray(identifier, { minLength: 1, maxLength: 4, selector: identityKey })
    .map((ids) => ids.filter((id) => id.kind !== 'customer_id' || withCustomerIds))
    // Low-confidence identifiers make who is merged with whom depend on order by design (the first
    // record to link one decides whom later records attach to): they go with the customer_ids.
    .map((ids) => ids.filter((id) => id.kind !== LOW_KIND || withCustomerIds))
    .map((ids) =>
      ids.filter(
        (id, i) => id.kind !== 'customer_id' || ids.findIndex((x) => x.kind === 'customer_id') === i,
      ),
    )
    .filter((ids) => ids.length > 0)
    .map((ids) =>
      [...ids].sort(
        (a, b) => rank(a.kind) - rank(b.kind) || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0),
      ),
    );
const rank = (kind: string) => ['customer_id', 'email'].indexOf(kind) >>> 0;

/** Records in messages; each message is one bus delivery, cut into batches of messages. */
const scenario = (withCustomerIds: boolean) =>
  fc.record({
    messages: fc.array(fc.array(recordIds(withCustomerIds), { minLength: 1, maxLength: 4 }), {
      minLength: 1,
      maxLength: 10,
    }),
    cuts: fc.array(fc.boolean(), { maxLength: 10 }),
  });

function toInputs(messages: Identifier[][][], tag: string): ResolveInput[][] {
  return messages.map((records, m) =>
    records.map((ids, index) => {
      const message = `${tag}-m${m}`;
      const low = lowPositions(ids);
      return {
        ids,
        seed: `${message}:${index}`,
        born: bornKey((1_000 + m) * 1000 + index),
        message,
        index,
        ...(low.length ? { low } : {}),
      };
    }),
  );
}

function batches(messages: ResolveInput[][], cuts: boolean[]): ResolveInput[][] {
  const out: ResolveInput[][] = [[]];
  messages.forEach((m, i) => {
    if (i > 0 && cuts[i]) out.push([]);
    out.at(-1)!.push(...m);
  });
  return out;
}

/** Which identifiers share a customer, as a set of sorted groups: what must not depend on order. */
async function partition(index: IdentityIndex, account: string, ids: Identifier[]): Promise<string[]> {
  const groups = new Map<string, string[]>();
  for (const id of ids) {
    const owner = (await index.lookup(account, id))!;
    groups.set(owner, [...(groups.get(owner) ?? []), identityKey(id)]);
  }
  return [...groups.values()].map((g) => g.sort().join(' | ')).sort();
}

let accounts = 0;

const hasEffects = (r: Resolution) =>
  r.created || r.linked.length > 0 || r.merged.length > 0 || r.conflicts.length > 0;

/**
 * The property suite every identity driver runs: thousands of random scenarios each, against the
 * reference model and against invariants that hold whatever the order of the input.
 */
export function identityProperties(
  name: string,
  fresh: (account: string) => Promise<IdentityIndex>,
  runs: number,
): void {
  const run = Math.random().toString(36).slice(2, 8);
  const account = () => `prop${run}${accounts++}`;

  describe(`identity properties: ${name}`, () => {
    it('agrees with the reference model record for record, however the messages are batched', async () => {
      await fc.assert(
        fc.asyncProperty(scenario(true), async ({ messages, cuts }) => {
          const a = account();
          const index = await fresh(a);
          const model = new ReferenceModel();
          const inputs = toInputs(messages, a);
          for (const batch of batches(inputs, cuts)) {
            const got = await index.resolve(a, batch);
            const want = batch.map((rec) => model.apply(rec));
            expect(got.map(({ born: _born, ...r }) => ({ ...r, merged: [...r.merged].sort() }))).toEqual(
              want.map((r) => ({ ...r, merged: [...r.merged].sort() })),
            );
            await index.settle(a, [...new Set(batch.map((r) => r.message))]);
          }
          for (const id of inputs.flat(2).flatMap((r) => r.ids)) {
            expect(await index.lookup(a, id)).toBe(model.ownerOf(identityKey(id)));
          }
          await index.close();
        }),
        { numRuns: runs },
      );
    });

    it('never gives one customer two customer_ids, and every identifier seen resolves', async () => {
      await fc.assert(
        fc.asyncProperty(scenario(true), async ({ messages, cuts }) => {
          const a = account();
          const index = await fresh(a);
          const inputs = toInputs(messages, a);
          for (const batch of batches(inputs, cuts)) await index.resolve(a, batch);
          for (const id of inputs.flat().flatMap((r) => r.ids)) {
            const owner = await index.lookup(a, id);
            expect(owner).toBeDefined();
            const cids = (await index.identifiersOf(a, owner!)).filter((i) => i.kind === 'customer_id');
            expect(cids.length).toBeLessThanOrEqual(1);
          }
          await index.close();
        }),
        { numRuns: Math.ceil(runs / 2) },
      );
    });

    it('without customer_ids, who is merged with whom does not depend on order, batching or repetition', async () => {
      await fc.assert(
        fc.asyncProperty(
          scenario(false),
          fc.func(fc.integer()),
          fc.array(fc.nat(), { maxLength: 5 }),
          async ({ messages, cuts }, order, repeats) => {
            const ids = messages.flat(2);
            const a = account();
            const first = await fresh(a);
            for (const batch of batches(toInputs(messages, a), cuts)) await first.resolve(a, batch);
            const expected = await partition(first, a, ids);
            await first.close();

            // The same records shuffled, some repeated in messages of their own, in one batch each.
            const shuffled = messages
              .map((m, i) => ({ m, k: order(i) }))
              .sort((x, y) => x.k - y.k)
              .map((x) => x.m);
            for (const r of repeats) shuffled.push(messages[r % messages.length]!);
            const b = account();
            const second = await fresh(b);
            for (const batch of toInputs(shuffled, b)) await second.resolve(b, batch);
            expect(await partition(second, b, ids)).toEqual(expected);
            await second.close();
          },
        ),
        { numRuns: Math.ceil(runs / 2) },
      );
    });

    it('a redelivered batch gets the same answers before it is settled, and changes nothing after', async () => {
      await fc.assert(
        fc.asyncProperty(scenario(true), async ({ messages }) => {
          const a = account();
          const index = await fresh(a);
          const batch = toInputs(messages, a).flat();
          const first = await index.resolve(a, batch);
          const changed = new Set(batch.filter((_, i) => hasEffects(first[i]!)).map((r) => r.message));
          const again = await index.resolve(a, batch);
          for (const [i, r] of batch.entries()) {
            // A message that changed the graph gets its answers again; one that did not is simply resolved anew.
            if (changed.has(r.message)) expect(again[i]).toEqual(first[i]);
            else expect(again[i]).toMatchObject({ created: false, linked: [], merged: [] });
          }
          await index.settle(a, [...new Set(batch.map((r) => r.message))]);
          const after = await index.resolve(a, batch);
          for (const r of after) expect(r).toMatchObject({ created: false, linked: [], merged: [] });
          await index.close();
        }),
        { numRuns: Math.ceil(runs / 4) },
      );
    });
  });
}
