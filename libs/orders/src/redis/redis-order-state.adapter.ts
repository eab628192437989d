import type { DriverHealth } from '@cdp/contracts';
import {
  EVERY_SHARD,
  accountShard,
  accountShardPrefix,
  groupBy,
  RebuildLocks,
  shardPrefixOf,
  type RedisCommands,
  type RedisConnection,
} from '@cdp/redis';
import type { OrderChange, OrderSnapshot, OrderValue } from '@cdp/domain';
import { OrdersNotWarmError, OrderState, type ApplyResult, type ChangeOutcome } from '../order-state.port.js';
import { ORDER_APPLY_FN, ORDER_LIBRARY } from './redis-order-functions.js';

/**
 * An order's keys are on the shard of its order id (`{<account>#hh}`), beside that shard's index and
 * ready marker, so a big account's orders use every primary of a cluster (docs/architecture.md, "One
 * account across the cluster"): a function call checks the ready marker of every shard it touches (on a
 * cluster, where a call may touch one slot only, that is its one shard's). The rebuild lock guards the
 * whole account and stays on the account's tag.
 */
export const orderKeys = {
  ready: (account: string, shard: number) => `${accountShardPrefix(account, shard)}orders-ready`,
  rebuilding: (account: string) => `cdp:{${account}}:orders-rebuilding`,
  order: (account: string, orderId: string) => `${shardPrefixOf(account, orderId)}o:${orderId}`,
  applied: (account: string, orderId: string) => `${shardPrefixOf(account, orderId)}oa:${orderId}`,
  /** Entity updates waiting for an order event accepted before them (redis-order-functions.ts). */
  pending: (account: string, orderId: string) => `${shardPrefixOf(account, orderId)}op:${orderId}`,
  /** Sorted set of the shard's orders: order id -> when its keys expire (redis-order-functions.ts). */
  index: (account: string, shard: number) => `${accountShardPrefix(account, shard)}orders`,
  /**
   * The layout before the sharding, all on the account's tag: read by `get` until the account's first
   * rebuild on this release, which deletes it (the missing shard ready markers force that rebuild).
   */
  legacy: {
    ready: (account: string) => `cdp:{${account}}:orders-ready`,
    order: (account: string, orderId: string) => `cdp:{${account}}:o:${orderId}`,
    applied: (account: string, orderId: string) => `cdp:{${account}}:oa:${orderId}`,
    pending: (account: string, orderId: string) => `cdp:{${account}}:op:${orderId}`,
    index: (account: string) => `cdp:{${account}}:orders`,
  },
};

/** Changes per function call while rebuilding: each call blocks Redis for its duration. */
const LOAD_CHUNK = 500;

/** Orders deleted per MULTI while forgetting an account. */
const FORGET_PAGE = 1000;

type WireOutcome = [0 | 1, number, 0 | 1, 0 | 1];

/**
 * The order state in Redis: one hash per order, one of applied change ids and one of pending entity
 * updates. On a single server a batch is one atomic function call over every shard it touches, as before
 * the sharding; on a cluster, one call per shard it touches (a call may touch one slot), all at once: an
 * order's changes are all on its shard and keep their order there; different orders are independent. A
 * crash between two shards' calls leaves the others to the redelivery, which is safe: a change whose id
 * an order's applied hash holds is answered from it and moves nothing (redis-order-functions.ts).
 */
export class RedisOrderState extends OrderState {
  private readonly redis: RedisCommands;
  readonly persistent = true;
  private readonly locks: RebuildLocks;
  /** Accounts seen without orders in the layout before the sharding: `get` reads no legacy hash for them. */
  private readonly legacyGone = new Set<string>();

  /** `retentionMs`: an order's keys expire this long after its last applied change. */
  constructor(
    private readonly connection: RedisConnection,
    readonly retentionMs: number,
    options: { rebuildLockMs?: number } = {},
  ) {
    super();
    this.redis = connection.commands;
    this.locks = new RebuildLocks(this.redis, options.rebuildLockMs);
  }

  apply(account: string, changes: OrderChange[]): Promise<ApplyResult> {
    return this.call(account, changes, false);
  }

  private async call(account: string, changes: OrderChange[], rebuilding: boolean): Promise<ApplyResult> {
    if (changes.length === 0) return { outcomes: [], orders: [] };
    // A single server takes every shard's orders in one call; a cluster, one call per shard (its slot).
    const groups = groupBy(changes.keys(), (i) =>
      this.connection.isCluster ? accountShard(changes[i]!.orderId) : 0,
    );
    const outcomes: ChangeOutcome[] = new Array<ChangeOutcome>(changes.length);
    const orders: OrderSnapshot[] = [];
    const calls = await Promise.allSettled(
      [...groups.values()].map(async (indices) => {
        const part = await this.callOnce(
          account,
          indices.map((i) => changes[i]!),
          rebuilding,
        );
        indices.forEach((i, k) => (outcomes[i] = part.outcomes[k]!));
        orders.push(...part.orders);
      }),
    );
    // Every call has ended before this throws: a caller that rebuilds and applies again races none.
    const failed = calls.find((c): c is PromiseRejectedResult => c.status === 'rejected');
    if (failed) throw failed.reason;
    return { outcomes, orders };
  }

  /**
   * Applies `changes` (in order) in one atomic function call, with the ready marker and index of each
   * shard their orders are on: it refuses them all if any of those shards is not loaded.
   */
  private async callOnce(account: string, changes: OrderChange[], rebuilding: boolean): Promise<ApplyResult> {
    const orderIds: string[] = [];
    const index = new Map<string, number>();
    // Each shard's ready marker and index once, however many of its orders the call holds.
    const shardKeys: string[] = [];
    const shardAt = new Map<number, number>();
    const orderWire: [string, number][] = [];
    const perOrder: string[] = [];
    const encoded = changes.map((c) => {
      let i = index.get(c.orderId);
      if (i === undefined) {
        index.set(c.orderId, (i = orderIds.push(c.orderId) - 1));
        const shard = accountShard(c.orderId);
        let at = shardAt.get(shard);
        if (at === undefined) {
          shardAt.set(shard, (at = shardKeys.length / 2));
          shardKeys.push(orderKeys.ready(account, shard), orderKeys.index(account, shard));
        }
        orderWire.push([c.orderId, at]);
        perOrder.push(
          orderKeys.order(account, c.orderId),
          orderKeys.applied(account, c.orderId),
          orderKeys.pending(account, c.orderId),
        );
      }
      const f: Record<string, string> = {};
      for (const [name, value] of Object.entries(c.fields)) f[name] = JSON.stringify(value);
      const wire: Record<string, unknown> = { id: c.id, k: c.kind, a: c.action, ts: String(c.ts), f };
      if (c.at !== undefined) wire.at = String(c.at);
      if (c.customerId) wire.cu = c.customerId;
      if (c.subtotal !== undefined) wire.s = String(c.subtotal);
      if (c.total !== undefined) wire.t = String(c.total);
      return [i, wire];
    });
    const args = [
      JSON.stringify(encoded),
      rebuilding ? '1' : '0',
      String(this.retentionMs),
      JSON.stringify(orderWire),
      String(shardAt.size),
    ];
    let raw: string;
    try {
      raw = await this.connection.fcall(ORDER_LIBRARY, ORDER_APPLY_FN, [...shardKeys, ...perOrder], args);
    } catch (err) {
      if (/CDP_ORDERS_NOT_WARM/.test(String(err))) throw new OrdersNotWarmError(account);
      throw err;
    }
    const [outcomes, touched] = JSON.parse(raw) as [WireOutcome[], [number, string[]][] | object];
    // cjson encodes an empty array as {}.
    const orders: [number, string[]][] = Array.isArray(touched) ? (touched as [number, string[]][]) : [];
    return {
      outcomes: outcomes.map(([applied, seq, recorded, pending]) => ({
        applied: applied === 1,
        seq,
        recorded: recorded === 1,
        ...(pending === 1 ? { pending: true as const } : {}),
      })),
      orders: orders.map(([i, flat]) => decode(orderIds[i]!, flat)),
    };
  }

  /**
   * The order from its shard, or else (an account not rebuilt since the sharding) from the layout
   * before, so "does the order exist" holds across the upgrade.
   */
  async get(account: string, orderId: string): Promise<OrderSnapshot | undefined> {
    const hash = await this.redis.hGetAll(orderKeys.order(account, orderId));
    if (hash.v) return decode(orderId, Object.entries(hash).flat());
    if (this.legacyGone.has(account)) return undefined;
    // The legacy index lists every legacy order (indexed in the call that wrote it): without it, none.
    if (!(await this.redis.exists(orderKeys.legacy.index(account)))) {
      this.legacyGone.add(account);
      return undefined;
    }
    const legacy = await this.redis.hGetAll(orderKeys.legacy.order(account, orderId));
    return legacy.v ? decode(orderId, Object.entries(legacy).flat()) : undefined;
  }

  async beginRebuild(account: string): Promise<boolean> {
    if (!(await this.locks.acquire(orderKeys.rebuilding(account)))) return false;
    // One key per shard, each its own slot: sent at once (the client pipelines them).
    await Promise.all(EVERY_SHARD.map((shard) => this.redis.del(orderKeys.ready(account, shard))));
    return true;
  }

  async load(account: string, changes: AsyncIterable<OrderChange>): Promise<number> {
    await this.forget(account);
    let count = 0;
    let chunk: OrderChange[] = [];
    for await (const change of changes) {
      chunk.push(change);
      count++;
      if (chunk.length === LOAD_CHUNK) {
        await this.call(account, chunk, true);
        chunk = [];
      }
    }
    await this.call(account, chunk, true);
    this.locks.stopRenewing(orderKeys.rebuilding(account));
    // Every shard is loaded before any opens; a crash midway leaves some shards closed, and the first
    // batch that touches one rebuilds the account again.
    const now = new Date().toISOString();
    await Promise.all(EVERY_SHARD.map((shard) => this.redis.set(orderKeys.ready(account, shard), now)));
    await this.redis.del(orderKeys.rebuilding(account));
    return count;
  }

  /** Stops renewing the rebuild's lock, and releases it if `load` did not (the rebuild failed). */
  async endRebuild(account: string): Promise<void> {
    await this.locks.release(orderKeys.rebuilding(account));
  }

  /**
   * Deletes the account's orders: those of the layout before the sharding (and its ready marker), then
   * every shard's, all shards at once.
   */
  private async forget(account: string): Promise<void> {
    const legacy = orderKeys.legacy;
    await this.forgetIndexed(legacy.index(account), (id) => [
      legacy.order(account, id),
      legacy.applied(account, id),
      legacy.pending(account, id),
    ]);
    await this.redis.del(legacy.ready(account));
    this.legacyGone.add(account);
    await Promise.all(
      EVERY_SHARD.map((shard) =>
        this.forgetIndexed(orderKeys.index(account, shard), (id) => [
          orderKeys.order(account, id),
          orderKeys.applied(account, id),
          orderKeys.pending(account, id),
        ]),
      ),
    );
  }

  /**
   * Deletes the orders an index lists, a page at a time; a page leaves the index only with its keys (one
   * MULTI: the index and its orders share a slot), so a crash in between leaves nothing unindexed.
   */
  private async forgetIndexed(index: string, keysOf: (orderId: string) => string[]): Promise<void> {
    for (;;) {
      const page = await this.redis.zRange(index, 0, FORGET_PAGE - 1);
      if (page.length === 0) return;
      await this.redis.multi().unlink(page.flatMap(keysOf)).zRem(index, page).exec();
    }
  }

  health(): Promise<DriverHealth> {
    return this.connection.health();
  }

  close(): Promise<void> {
    return Promise.resolve(); // the connection belongs to the drivers module
  }
}

function decode(orderId: string, flat: string[]): OrderSnapshot {
  const h = new Map<string, string>();
  for (let i = 0; i < flat.length; i += 2) h.set(flat[i]!, flat[i + 1]!);
  const fields: OrderSnapshot['fields'] = {};
  for (const [key, value] of h) {
    if (key.startsWith('f:')) {
      const name = key.slice(2);
      const at = h.get(`a:${name}`);
      fields[name] = { value: JSON.parse(value) as OrderValue, ts: Number(h.get(`t:${name}`)) };
      if (at !== undefined) fields[name].at = Number(at);
    }
  }
  const pts = h.get('pts');
  const kept: Partial<OrderSnapshot> = {};
  if (h.has('pa')) kept.purchaseAt = Number(h.get('pa'));
  if (h.has('ps')) kept.purchaseSubtotal = Number(h.get('ps'));
  if (h.has('pt')) kept.purchaseTotal = Number(h.get('pt'));
  if (h.has('pd')) kept.displacedPurchases = JSON.parse(h.get('pd')!) as string[];
  return {
    ...kept,
    orderId,
    version: Number(h.get('v') ?? 0),
    customerId: h.get('cu') ?? null,
    purchaseEventId: h.get('pe') ?? null,
    purchaseTs: pts === undefined ? null : Number(pts),
    subtotal: Number(h.get('s') ?? 0),
    total: Number(h.get('t') ?? 0),
    adjustments: Number(h.get('adj') ?? 0),
    cancelled: h.get('c') === '1',
    cancelledInFull: h.get('cf') === '1',
    fields,
  };
}
