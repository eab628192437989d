import { configureFaults, InjectedFault, parseFaults, SHARDED_IDENTITY_POINTS } from '@cdp/faults';
import { IdentityNotWarmError } from '@cdp/identity';
import { ShardedIdentityIndex, shardedKeys } from '@cdp/identity/redis';
import {
  AccountLeases,
  accountStep,
  FencedError,
  writeShard,
} from '../libs/identity/src/redis/sharded-lease.js';
import { graphRows, record } from '../libs/identity/src/identity.contract.js';
import {
  cid,
  email,
  graphOf,
  scenario,
  shardedIdentityContract,
  vuid,
} from '../libs/identity/src/redis/sharded-identity.contract.js';
import { clusterForFile } from './support/redis-cluster.js';

/**
 * The sharded identity index (CDP_IDENTITY_SHARDING=shards) on one 6-node loopback cluster for the
 * file: the contract and the properties, a merge across primaries, a crash at each step of a batch's
 * protocol, a crashed batch finished by another processor, two processors racing, and the lease's fence.
 */
const file = clusterForFile();
afterAll(() => configureFaults([]));

const { fresh } = shardedIdentityContract('redis cluster, sharded', () => file.redis, 150);
const run = Math.random().toString(36).slice(2, 8);

// One wiring: a Redis Cluster is a scaled-out deployment; the embedded wiring has no Redis.
describe('the sharded identity index on a cluster', () => {
  afterEach(() => configureFaults([]));

  it('merges customers whose entries live on different primaries, and never two customer_ids', async () => {
    // New accounts until the three customers' entries sit on three primaries (2 in 9 accounts do).
    const setUp = async () => {
      const { account, index } = await fresh();
      const [a] = await index.resolve(account, [record([cid('x-1'), email('x1@x')], 'xa')]);
      const [b] = await index.resolve(account, [record([cid('x-2'), email('x2@x')], 'xb')]);
      const [c] = await index.resolve(account, [record([vuid('xv')], 'xc')]);
      const where = [a!, b!, c!].map((x) =>
        file.cluster.primaryOf(shardedKeys.entries(account, x.customerId)),
      );
      return { account, index, a, b, c, primaries: new Set(await Promise.all(where)).size };
    };
    let set = await setUp();
    for (let tries = 1; set.primaries < 3 && tries < 40; tries++) set = await setUp();
    expect(set.primaries).toBe(3);
    const { account, index, a, b, c } = set;
    const [r] = await index.resolve(account, [record([email('x1@x'), email('x2@x'), vuid('xv')], 'xd')]);
    expect(r).toMatchObject({
      customerId: a!.customerId,
      merged: [c!.customerId],
      conflicts: [{ customerId: b!.customerId, reason: 'customer_id' }],
    });
    expect(await index.lookup(account, vuid('xv'))).toBe(a!.customerId);
    expect(await index.lookup(account, email('x2@x'))).toBe(b!.customerId);
    expect((await index.identifiersOf(account, c!.customerId)).length).toBe(3);
  });

  it('a crashed batch is finished by the next batch of another processor, before it reads', async () => {
    const control = await fresh();
    const crashed = await fresh();
    const { before, batch, ids } = scenario('fin');
    for (const b of before) {
      await control.index.resolve(control.account, b);
      await crashed.index.resolve(crashed.account, b);
    }
    const next = [record([email('fina@x'), vuid('finv9')], 'fin-next', 'fin-next', 0)];
    const want = [
      await control.index.resolve(control.account, batch),
      await control.index.resolve(control.account, next),
    ];
    configureFaults(parseFaults(`${SHARDED_IDENTITY_POINTS.losersWritten}:throw`));
    await expect(crashed.index.resolve(crashed.account, batch)).rejects.toThrow(InjectedFault);
    configureFaults([]);
    const other = new ShardedIdentityIndex(file.redis, { leaseMs: 1500 });
    expect(await other.resolve(crashed.account, next)).toEqual(want[1]);
    // The crashed batch's own redelivery gets the answers its first attempt decided.
    expect(await other.resolve(crashed.account, batch)).toEqual(want[0]);
    const all = [...ids, vuid('finv9')];
    expect(await graphOf(other, crashed.account, all)).toEqual(
      await graphOf(control.index, control.account, all),
    );
  });

  it('two processors racing on one account: one at a time, every identifier ends with one customer', async () => {
    const { account } = await fresh();
    const one = new ShardedIdentityIndex(file.redis);
    const two = new ShardedIdentityIndex(file.redis);
    const batches = Array.from({ length: 20 }, (_, b) =>
      Array.from({ length: 10 }, (_, i) =>
        record([email(`r${(b * 7 + i) % 30}@x`), vuid(`rv${b}-${i}`)], `r${b}-${i}`, `r-m${b}`, i),
      ),
    );
    await Promise.all([
      (async () => {
        for (const b of batches.filter((_, n) => n % 2 === 0)) await one.resolve(account, b);
      })(),
      (async () => {
        for (const b of batches.filter((_, n) => n % 2 === 1)) await two.resolve(account, b);
      })(),
    ]);
    for (const b of batches.flat()) {
      const owner = await one.lookup(account, b.ids[1]!);
      expect(owner).toBeDefined();
      expect(await one.lookup(account, b.ids[0]!)).toBe(owner);
      const members = (await one.identifiersOf(account, owner!)).map((m) => `${m.kind}:${m.value}`);
      expect(members).toContain(`vuid:${b.ids[1]!.value}`);
    }
  });

  it("a holder that dies keeps the lease until it runs out; then the stale holder's writes are refused", async () => {
    const account = `lease${run}`;
    const keys = { pending: shardedKeys.pending(account), mergeSeq: shardedKeys.mergeSeq(account) };
    const stale = new AccountLeases(file.redis.commands, 300);
    const next = new AccountLeases(file.redis.commands, 300);
    const held = await stale.acquire(shardedKeys.lease(account), shardedKeys.epoch(account));
    stale.abandon(held); // dies without releasing
    const taken = await next.acquire(shardedKeys.lease(account), shardedKeys.epoch(account));
    expect(taken.epoch).toBe(held.epoch + 1);
    const prefix = `cdp:{${account}#07}:`;
    expect(
      await writeShard(file.redis.commands, `${prefix}fence`, '', taken.epoch, [['s', `${prefix}x`, 'new']]),
    ).toBe(true);
    await expect(
      writeShard(file.redis.commands, `${prefix}fence`, '', held.epoch, [['s', `${prefix}x`, 'stale']]),
    ).rejects.toThrow(FencedError);
    await expect(accountStep(file.redis.commands, held, keys, 'add', 'intent')).rejects.toThrow(FencedError);
    expect(await file.redis.commands.get(`${prefix}x`)).toBe('new');
    await next.release(taken);
  });

  it('a rebuild takes the lease: it waits out a dead holder, then that holder cannot write over the rebuilt graph', async () => {
    const { account, index } = await fresh();
    await index.resolve(account, [record([email('rb1@x'), vuid('rbv1')], 'rb1')]);
    const dead = new AccountLeases(file.redis.commands, 300);
    const held = await dead.acquire(shardedKeys.lease(account), shardedKeys.epoch(account));
    dead.abandon(held); // dies holding the lease, a batch half written
    expect(await index.beginRebuild(account)).toBe(true);
    await expect(index.resolve(account, [record([vuid('rbv2')], 'rb2')])).rejects.toThrow(
      IdentityNotWarmError,
    );
    await index.load(account, graphRows([{ kind: 'vuid', value: 'rbv9', svc_id: 'c-rb9', born: '1' }]));
    await index.endRebuild(account);
    // Every shard was fenced at the rebuild's epoch: the dead holder's late write is refused wherever it lands.
    const ids = shardedKeys.ids(account, 'email:rb1@x');
    const prefix = ids.slice(0, ids.indexOf('}:') + 2);
    await expect(
      writeShard(file.redis.commands, `${prefix}fence`, '', held.epoch, [['h', ids, 'email:rb1@x', 'ghost']]),
    ).rejects.toThrow(FencedError);
    expect(await index.lookup(account, email('rb1@x'))).toBeUndefined(); // the store had only rbv9
    expect(await index.lookup(account, vuid('rbv9'))).toBe('c-rb9');
  });

  it('a crash before the intent is listed leaves an intent that expires, as the markers do', async () => {
    const { account, index } = await fresh();
    configureFaults(parseFaults(`${SHARDED_IDENTITY_POINTS.intentStored}:throw`));
    await expect(index.resolve(account, [record([email('ttl@x')], 'ttl', 'ttl-m', 0)])).rejects.toThrow(
      InjectedFault,
    );
    configureFaults([]);
    const [intent] = (await file.cluster.keysByPrimary(`cdp:{${account}#*}:intent:*`)).flat();
    expect(intent).toBeDefined();
    const ttl = Number(
      await file.redis.commands.eval(`return redis.call('TTL', KEYS[1])`, { keys: [intent!] }),
    );
    expect(ttl).toBeGreaterThan(6 * 86_400);
  });

  it("spreads one account's index entries over the cluster's primaries", async () => {
    const { account, index } = await fresh(30_000);
    const t0 = performance.now();
    for (let b = 0; b < 50; b++)
      await index.resolve(
        account,
        Array.from({ length: 20 }, (_, i) =>
          record([email(`s${b}-${i}@x`), vuid(`sv${b}-${i}`)], `s${b}-${i}`, `s-m${b}`, i),
        ),
      );
    const perBatch = (performance.now() - t0) / 50;
    // Each primary's keys of the account (SCAN on each; the account's name is unique to the run).
    const counts = await Promise.all(
      (await file.cluster.keysByPrimary(`cdp:{${account}#*`)).map(async (keys) => {
        let n = 0;
        for (const key of keys.filter((k) => /:(ids|c)$/.test(k)))
          n += Number(await file.redis.commands.eval(`return redis.call('HLEN', KEYS[1])`, { keys: [key] }));
        return n;
      }),
    );
    const total = counts.reduce((x, y) => x + y, 0);
    expect(total).toBe(3000); // 2000 identifiers, 1000 customers
    const shares = counts.map((n) => n / total);
    expect(shares).toHaveLength(3);
    for (const share of shares) expect(share).toBeGreaterThan(0.2);
    console.info(
      `one account's index entries per primary: ${shares.map((s) => (s * 100).toFixed(1)).join(' %, ')} % (a batch of 20 new customers: ${perBatch.toFixed(1)} ms)`,
    );
  }, 180_000);
});
