import type { Identifier } from '@cdp/domain';
import { configureFaults, InjectedFault, parseFaults, SHARDED_IDENTITY_POINTS } from '@cdp/faults';
import { ACCOUNT_SHARDS, accountShardPrefix, type RedisConnection } from '@cdp/redis';
import { identityProperties } from '../identity-properties.contract.js';
import { graphRows, identityIndexContract, record } from '../identity.contract.js';
import { AccountGraph } from '../memory/account-graph.js';
import type { ResolveInput } from '../resolution.js';
import { ShardedIdentityIndex, shardedKeys } from './sharded-identity-index.adapter.js';
import { idKey, type ShardedEntry } from './sharded-batch-graph.js';

export const email = (value: string): Identifier => ({ kind: 'email', value });
export const vuid = (value: string): Identifier => ({ kind: 'vuid', value });
export const cid = (value: string): Identifier => ({ kind: 'customer_id', value });

/** Where each identifier resolves, and each customer's identifiers (sorted), for comparing two accounts. */
export async function graphOf(index: ShardedIdentityIndex, account: string, ids: Identifier[]) {
  return Promise.all(
    ids.map(async (i) => {
      const owner = await index.lookup(account, i);
      const members = owner ? await index.identifiersOf(account, owner) : [];
      return { id: i, owner, members: members.map((m) => `${m.kind}:${m.value}`).sort() };
    }),
  );
}

/** A history that spreads over shards and merges, then a batch that merges more and links new ones. */
export function scenario(tag: string): {
  before: ResolveInput[][];
  batch: ResolveInput[];
  ids: Identifier[];
} {
  const before = [
    [record([email(`${tag}a@x`), cid(`${tag}-1`)], `${tag}a`)],
    [record([vuid(`${tag}v1`)], `${tag}b`)],
    [record([email(`${tag}c@x`), vuid(`${tag}v2`)], `${tag}c`)],
  ];
  const batch = [
    record([vuid(`${tag}v1`), email(`${tag}a@x`), vuid(`${tag}v3`)], `${tag}d`, `${tag}-m1`, 0),
    record([email(`${tag}c@x`), vuid(`${tag}v1`), email(`${tag}e@x`)], `${tag}e`, `${tag}-m1`, 1),
    record([email(`${tag}f@x`)], `${tag}f`, `${tag}-m2`, 0),
  ];
  const ids = [...before.flat(), ...batch].flatMap((r) => r.ids);
  return { before, batch, ids };
}

/** A seeded generator of numbers in [0, 1) (mulberry32): a failing case is found again from its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Random rows of the shape the store gives (each identifier once, with its first owner; every merged
 * customer has links): `customers` customers with 1 to 3 identifiers (some a customer_id, a few two),
 * each link with its own born key, the links in random order; lowered born keys for some customers and
 * for some that have no link (which count for nothing); merges between random customers in seq order,
 * some sharing a seq, so that losers are merged again and survivors were merged before (chains).
 */
function randomRows(seed: number, customers: number) {
  const next = random(seed);
  const int = (n: number) => Math.floor(next() * n);
  const bornKey = () => `b${String(int(1e6)).padStart(6, '0')}`;
  const links: { kind: string; value: string; svc_id: string; born: string }[] = [];
  for (let c = 0; c < customers; c++) {
    const svc_id = `c${seed}-${c}`;
    const n = 1 + int(3);
    for (let j = 0; j < n; j++) {
      const kind = next() < 0.25 ? 'customer_id' : next() < 0.5 ? 'email' : 'vuid';
      links.push({ kind, value: `${kind[0]}${c}-${j}`, svc_id, born: bornKey() });
    }
  }
  for (let i = links.length - 1; i > 0; i--) {
    const j = int(i + 1);
    [links[i], links[j]] = [links[j]!, links[i]!];
  }
  const borns = Array.from({ length: Math.floor(customers / 3) }, () => ({
    svc_id: next() < 0.8 ? `c${seed}-${int(customers)}` : `nolinks${seed}-${int(customers)}`,
    born: bornKey(),
  }));
  const merges: { loser: string; survivor: string; seq: number }[] = [];
  for (let i = 0, seq = 1; i < customers * 0.6; i++) {
    if (next() < 0.7) seq++;
    merges.push({ loser: `c${seed}-${int(customers)}`, survivor: `c${seed}-${int(customers)}`, seq });
  }
  return () => graphRows(links, merges, borns);
}

/** Every `ids` and `c` entry of an account, over its 256 shards. */
async function shardedGraph(redis: RedisConnection, account: string) {
  const ids: Record<string, string> = {};
  const entries: Record<string, ShardedEntry> = {};
  await Promise.all(
    Array.from({ length: ACCOUNT_SHARDS }, async (_, s) => {
      const p = accountShardPrefix(account, s);
      Object.assign(ids, await redis.commands.hGetAll(`${p}ids`));
      for (const [c, text] of Object.entries(await redis.commands.hGetAll(`${p}c`)))
        entries[c] = JSON.parse(text) as ShardedEntry;
    }),
  );
  return { ids, entries };
}

/** The sharded index's entries for the graph computed in memory (what its rebuild wrote before issue 30's streaming). */
function expectedGraph(graph: AccountGraph) {
  const ids: Record<string, string> = {};
  for (const [key, c] of graph.owners) ids[key.replace('\u0000', ':')] = c;
  const entries: Record<string, ShardedEntry> = {};
  for (const [c, born] of graph.born) {
    const e: ShardedEntry = {
      b: born,
      i: (graph.members.get(c) ?? []).map(idKey),
      a: graph.absorbed.get(c) ?? [],
    };
    const cid = graph.customerIds.get(c);
    if (cid !== undefined) e.k = cid;
    const s = graph.mergedInto.get(c);
    if (s !== undefined) e.s = s;
    entries[c] = e;
  }
  return { ids, entries };
}

/**
 * The sharded identity index on one Redis deployment (a single server: every shard in one call; a
 * cluster: one call per shard): the identity contract, the property suite, and a crash at each step of
 * a batch's protocol redelivered by another processor. `fresh` opens a new account (a short lease, so a
 * crash's runs out soon).
 */
export function shardedIdentityContract(
  name: string,
  connection: () => RedisConnection,
  propertyRuns: number,
): {
  fresh: (leaseMs?: number) => Promise<{ account: string; index: ShardedIdentityIndex }>;
  /** Every account the suite made (a shared Redis outlives the run: its caller may delete them). */
  accounts: string[];
} {
  const run = Math.random().toString(36).slice(2, 8);
  const accounts: string[] = [];
  // Short, so a crashed holder's abandoned lease runs out soon for the next one, but renewed (every third
  // of it) through the stalls of a loaded 2-core machine, where 400 ms was once lost mid-batch.
  const fresh = async (leaseMs = 1500) => {
    const account = `sh${run}${accounts.length}`;
    accounts.push(account);
    await connection().commands.set(shardedKeys.ready(account), 'new');
    return { account, index: new ShardedIdentityIndex(connection(), { leaseMs }) };
  };

  identityIndexContract(name, async (names) => {
    const index = new ShardedIdentityIndex(connection());
    accounts.push(...names);
    for (const account of names) {
      await index.beginRebuild(account);
      await index.load(account, graphRows([]));
    }
    return index;
  });

  identityProperties(
    name,
    async (account) => {
      accounts.push(account);
      await connection().commands.set(shardedKeys.ready(account), 'new');
      return new ShardedIdentityIndex(connection());
    },
    propertyRuns,
  );

  describe(`sharded identity index (${name}): the rebuild`, () => {
    it.each([
      [1, 1000, 20_000],
      [2, 7, 20_000],
      [3, 1, 20_000],
      [4, 50, 20_000],
      [5, 1000, 9],
    ])(
      'streams random rows (seed %i, chunks of %i, writes cut at %s arguments) into exactly the graph AccountGraph.fromRows computes',
      async (seed, chunk, writeArgs) => {
        const rows = randomRows(seed, 300);
        const { account } = await fresh();
        const index = new ShardedIdentityIndex(connection(), {
          rebuildChunk: chunk,
          rebuildWriteArgs: writeArgs,
        });
        // Something to forget first: a batch's customer, which the store does not hold.
        await index.resolve(account, [record([email('gone@x')], 'gone')]);
        expect(await index.beginRebuild(account)).toBe(true);
        const reference = await AccountGraph.fromRows(rows());
        expect(await index.load(account, rows())).toBe(reference.owners.size);
        await index.endRebuild(account);
        const want = expectedGraph(reference);
        expect(reference.mergedInto.size).toBeGreaterThan(50); // chains and merges of merged customers
        const got = await shardedGraph(connection(), account);
        expect(got.ids).toEqual(want.ids);
        expect(got.entries).toEqual(want.entries);
        expect(await connection().commands.get(shardedKeys.mergeSeq(account))).toBe(
          String(reference.mergeSeq),
        );
        // And the reads follow it: a merged customer's identifiers are its survivor's.
        for (const [loser, survivor] of [...reference.mergedInto].slice(0, 20))
          expect((await index.identifiersOf(account, loser)).length).toBe(
            reference.members.get(survivor)!.length,
          );
      },
      60_000,
    );
  });

  describe(`sharded identity index (${name}): a crash at each step`, () => {
    afterEach(() => configureFaults([]));

    it.each(Object.values(SHARDED_IDENTITY_POINTS))(
      'a crash at %s: the redelivery, by another processor after the lease, gives the same graph',
      async (point) => {
        const control = await fresh();
        const crashed = await fresh();
        const { before, batch, ids } = scenario(`k${point.split('.').pop()}`);
        for (const b of before) {
          await control.index.resolve(control.account, b);
          await crashed.index.resolve(crashed.account, b);
        }
        const want = await control.index.resolve(control.account, batch);
        configureFaults(parseFaults(`${point}:throw`));
        await expect(crashed.index.resolve(crashed.account, batch)).rejects.toThrow(InjectedFault);
        configureFaults([]);
        const other = new ShardedIdentityIndex(connection(), { leaseMs: 1500 });
        expect(await other.resolve(crashed.account, batch)).toEqual(want);
        expect(await graphOf(other, crashed.account, ids)).toEqual(
          await graphOf(control.index, control.account, ids),
        );
        expect(await connection().commands.sMembers(shardedKeys.pending(crashed.account))).toEqual([]);
      },
    );
  });

  return { fresh, accounts };
}
