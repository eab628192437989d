import type { DriverHealth } from '@cdp/contracts';
import { RebuildLocks, type RedisCommands, type RedisConnection } from '@cdp/redis';
import type { OrderChange, OrderSnapshot, OrderValue } from '@cdp/domain';
import { OrdersNotWarmError, OrderState, type ApplyResult } from '../order-state.port.js';
import { ORDER_APPLY_FN, ORDER_LIBRARY } from './redis-order-functions.js';

/** Every key carries `{<account>}`, so an account's orders share one cluster slot with its identities. */
export const orderKeys = {
  ready: (account: string) => `cdp:{${account}}:orders-ready`,
  rebuilding: (account: string) => `cdp:{${account}}:orders-rebuilding`,
  order: (account: string, orderId: string) => `cdp:{${account}}:o:${orderId}`,
  applied: (account: string, orderId: string) => `cdp:{${account}}:oa:${orderId}`,
  /** Entity updates waiting for an order event accepted before them (redis-order-functions.ts). */
  pending: (account: string, orderId: string) => `cdp:{${account}}:op:${orderId}`,
  /** Sorted set: order id -> when its keys expire (redis-order-functions.ts). */
  index: (account: string) => `cdp:{${account}}:orders`,
};

/** Changes per function call while rebuilding: each call blocks Redis for its duration. */
const LOAD_CHUNK = 500;

/**
 * The order state in Redis: one hash per order, one of applied change ids and one of pending entity
 * updates, a batch per function call.
 */
export class RedisOrderState extends OrderState {
  private readonly redis: RedisCommands;
  readonly persistent = true;
  private readonly locks: RebuildLocks;

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
    const orderIds: string[] = [];
    const index = new Map<string, number>();
    const encoded = changes.map((c) => {
      let i = index.get(c.orderId);
      if (i === undefined) index.set(c.orderId, (i = orderIds.push(c.orderId) - 1));
      const f: Record<string, string> = {};
      for (const [name, value] of Object.entries(c.fields)) f[name] = JSON.stringify(value);
      const wire: Record<string, unknown> = { id: c.id, k: c.kind, a: c.action, ts: String(c.ts), f };
      if (c.at !== undefined) wire.at = String(c.at);
      if (c.customerId) wire.cu = c.customerId;
      if (c.subtotal !== undefined) wire.s = String(c.subtotal);
      if (c.total !== undefined) wire.t = String(c.total);
      return [i, wire];
    });
    const keys = [orderKeys.ready(account), orderKeys.index(account)];
    for (const id of orderIds)
      keys.push(orderKeys.order(account, id), orderKeys.applied(account, id), orderKeys.pending(account, id));
    const args = [
      JSON.stringify(encoded),
      rebuilding ? '1' : '0',
      String(this.retentionMs),
      JSON.stringify(orderIds),
    ];
    let raw: string;
    try {
      raw = await this.connection.fcall(ORDER_LIBRARY, ORDER_APPLY_FN, keys, args);
    } catch (err) {
      if (/CDP_ORDERS_NOT_WARM/.test(String(err))) throw new OrdersNotWarmError(account);
      throw err;
    }
    const [outcomes, touched] = JSON.parse(raw) as [
      [0 | 1, number, 0 | 1, 0 | 1][],
      [number, string[]][] | object,
    ];
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

  async get(account: string, orderId: string): Promise<OrderSnapshot | undefined> {
    const hash = await this.redis.hGetAll(orderKeys.order(account, orderId));
    if (!hash.v) return undefined;
    return decode(orderId, Object.entries(hash).flat());
  }

  async beginRebuild(account: string): Promise<boolean> {
    if (!(await this.locks.acquire(orderKeys.rebuilding(account)))) return false;
    await this.redis.del(orderKeys.ready(account));
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
    const open = this.redis.multi();
    open.set(orderKeys.ready(account), new Date().toISOString());
    open.del(orderKeys.rebuilding(account));
    await open.exec();
    return count;
  }

  /** Stops renewing the rebuild's lock, and releases it if `load` did not (the rebuild failed). */
  async endRebuild(account: string): Promise<void> {
    await this.locks.release(orderKeys.rebuilding(account));
  }

  /**
   * Deletes the account's orders, found from its index a page at a time; a page leaves the index only
   * with its keys (one MULTI), so a crash in between leaves nothing unindexed.
   */
  private async forget(account: string): Promise<void> {
    const index = orderKeys.index(account);
    for (;;) {
      const page = await this.redis.zRange(index, 0, 999);
      if (page.length === 0) return;
      const doomed = page.flatMap((id) => [
        orderKeys.order(account, id),
        orderKeys.applied(account, id),
        orderKeys.pending(account, id),
      ]);
      await this.redis.multi().unlink(doomed).zRem(index, page).exec();
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
