import type { DriverHealth } from '@cdp/contracts';
import { applyOrderChangeInOrder, type OrderChange, type OrderEntry, type OrderSnapshot } from '@cdp/domain';
import { OrderState, type ApplyResult, type ChangeOutcome } from '../order-state.port.js';

interface Entry extends OrderEntry {
  /** When the order is forgotten: `retentionMs` after its last applied change, as in Redis. */
  expiresAt: number;
}

/**
 * The embedded order state: maps per account, rebuilt from the store at start. An order expires
 * `retentionMs` after its last applied change (CDP_ORDER_RETENTION_DAYS), as the Redis driver's keys do:
 * each account's map is kept in order of last change (an applied change moves its order to the end),
 * so the expired orders are always at its front and each batch drops them in passing.
 */
export class MemoryOrderState extends OrderState {
  readonly persistent = false;
  private readonly accounts = new Map<string, Map<string, Entry>>();

  constructor(
    readonly retentionMs = Number.POSITIVE_INFINITY,
    private readonly clock: () => number = Date.now,
  ) {
    super();
  }

  private of(account: string): Map<string, Entry> {
    let orders = this.accounts.get(account);
    if (!orders) this.accounts.set(account, (orders = new Map<string, Entry>()));
    return orders;
  }

  private expire(orders: Map<string, Entry>, now: number): void {
    for (const [orderId, entry] of orders) {
      if (entry.expiresAt > now) return;
      orders.delete(orderId);
    }
  }

  apply(account: string, changes: OrderChange[]): Promise<ApplyResult> {
    const orders = this.of(account);
    const now = this.clock();
    this.expire(orders, now);
    const touched = new Map<string, OrderSnapshot>();
    const outcomes = changes.map((change): ChangeOutcome => {
      let entry = orders.get(change.orderId);
      if (!entry) entry = { state: undefined, applied: new Map(), pending: new Map(), expiresAt: 0 };
      const result = applyOrderChangeInOrder(entry, change);
      if (result.state && !result.pending) touched.set(change.orderId, result.state);
      if (result.applied || result.pending || (result.state && !orders.has(change.orderId))) {
        // A pending update is kept as long as an applied change would be (Redis expires its keys alike).
        entry.expiresAt = now + this.retentionMs;
        orders.delete(change.orderId); // to the end: the map stays in order of expiry
        orders.set(change.orderId, entry);
      }
      const outcome: ChangeOutcome = { applied: result.applied, seq: result.seq, recorded: result.recorded };
      if (result.pending) outcome.pending = true;
      return outcome;
    });
    return Promise.resolve({ outcomes, orders: [...touched.values()].map(copy) });
  }

  get(account: string, orderId: string): Promise<OrderSnapshot | undefined> {
    const entry = this.accounts.get(account)?.get(orderId);
    const live = entry && entry.expiresAt > this.clock() ? entry.state : undefined;
    return Promise.resolve(live ? copy(live) : undefined);
  }

  /** The memory state is rebuilt once, at start, before anything runs: nobody else can be rebuilding. */
  beginRebuild(): Promise<boolean> {
    return Promise.resolve(true);
  }

  async load(account: string, changes: AsyncIterable<OrderChange>): Promise<number> {
    this.accounts.set(account, new Map());
    let count = 0;
    for await (const change of changes) {
      await this.apply(account, [change]);
      count++;
    }
    return count;
  }

  endRebuild(): Promise<void> {
    return Promise.resolve();
  }

  health(): Promise<DriverHealth> {
    let size = 0;
    for (const orders of this.accounts.values()) size += orders.size;
    return Promise.resolve({ driver: 'memory', ready: true, detail: `${size} order(s)` });
  }

  close(): Promise<void> {
    this.accounts.clear();
    return Promise.resolve();
  }
}

/** Callers get copies: the state they hold must not change under them with the next batch. */
function copy(state: OrderSnapshot): OrderSnapshot {
  return structuredClone(state);
}
