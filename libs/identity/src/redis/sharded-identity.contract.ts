import type { Identifier } from '@cdp/domain';
import { configureFaults, InjectedFault, parseFaults, SHARDED_IDENTITY_POINTS } from '@cdp/faults';
import type { RedisConnection } from '@cdp/redis';
import { identityProperties } from '../identity-properties.contract.js';
import { graphRows, identityIndexContract, record } from '../identity.contract.js';
import type { ResolveInput } from '../resolution.js';
import { ShardedIdentityIndex, shardedKeys } from './sharded-identity-index.adapter.js';

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
  const fresh = async (leaseMs = 400) => {
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
        const other = new ShardedIdentityIndex(connection(), { leaseMs: 400 });
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
