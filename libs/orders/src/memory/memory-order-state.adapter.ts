import type { DriverHealth } from '@cdp/contracts';
import { applyOrderChange, type OrderChange, type OrderSnapshot } from '@cdp/domain';
import { OrderState, type ApplyResult, type ChangeOutcome } from '../order-state.port.js';

interface Entry {
  state: OrderSnapshot | undefined;
  applied: Map<string, number>;
}

/** The embedded order state: maps per account, rebuilt from the store at start. */
export class MemoryOrderState extends OrderState {
  readonly persistent = false;
  private readonly accounts = new Map<string, Map<string, Entry>>();

  private of(account: string): Map<string, Entry> {
    let orders = this.accounts.get(account);
    if (!orders) this.accounts.set(account, (orders = new Map<string, Entry>()));
    return orders;
  }

  apply(account: string, changes: OrderChange[]): Promise<ApplyResult> {
    const orders = this.of(account);
    const touched = new Map<string, OrderSnapshot>();
    const outcomes = changes.map((change): ChangeOutcome => {
      let entry = orders.get(change.orderId);
      if (!entry) entry = { state: undefined, applied: new Map() };
      const result = applyOrderChange(entry.state, entry.applied, change);
      if (result.state) {
        entry.state = result.state;
        orders.set(change.orderId, entry);
        touched.set(change.orderId, result.state);
      }
      return { applied: result.applied, seq: result.seq, recorded: result.recorded };
    });
    return Promise.resolve({ outcomes, orders: [...touched.values()].map(copy) });
  }

  get(account: string, orderId: string): Promise<OrderSnapshot | undefined> {
    const state = this.accounts.get(account)?.get(orderId)?.state;
    return Promise.resolve(state ? copy(state) : undefined);
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
