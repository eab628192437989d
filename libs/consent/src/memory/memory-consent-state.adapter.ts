import type { DriverHealth } from '@cdp/contracts';
import {
  ConsentState,
  type AppliedConsentChange,
  type ConsentChange,
  type ConsentSnapshot,
} from '../consent-state.port.js';

/** The embedded consent state: a map per account, rebuilt from the store's consent history at start. */
export class MemoryConsentState extends ConsentState {
  private readonly accounts = new Map<string, Map<string, ConsentSnapshot>>();

  private of(account: string): Map<string, ConsentSnapshot> {
    let customers = this.accounts.get(account);
    if (!customers) this.accounts.set(account, (customers = new Map<string, ConsentSnapshot>()));
    return customers;
  }

  apply(account: string, changes: ConsentChange[]): Promise<AppliedConsentChange[]> {
    const customers = this.of(account);
    return Promise.resolve(
      changes.map((change) => {
        const current = customers.get(change.customerId) ?? {
          customerId: change.customerId,
          version: 0,
          lists: {},
        };
        const next: ConsentSnapshot = {
          customerId: change.customerId,
          version: current.version + 1,
          lists: { ...current.lists, [change.listId]: change.subscribed },
        };
        customers.set(change.customerId, next);
        return { ...change, version: next.version };
      }),
    );
  }

  get(account: string, customerId: string): Promise<ConsentSnapshot | undefined> {
    const found = this.accounts.get(account)?.get(customerId);
    return Promise.resolve(found && structuredClone(found));
  }

  async *customers(account: string): AsyncIterable<ConsentSnapshot> {
    // A copy of the keys: changes applied during the walk do not upset it.
    const customers = this.accounts.get(account);
    for (const id of [...(customers?.keys() ?? [])]) {
      const found = customers!.get(id);
      if (found) yield await Promise.resolve(structuredClone(found));
    }
  }

  async load(
    account: string,
    states: AsyncIterable<{ svc_id: string; list_id: string; subscribed: boolean; version: number }>,
  ): Promise<number> {
    const fresh = new Map<string, ConsentSnapshot>();
    let count = 0;
    for await (const s of states) {
      const current = fresh.get(s.svc_id) ?? { customerId: s.svc_id, version: 0, lists: {} };
      current.lists[s.list_id] = s.subscribed;
      current.version = Math.max(current.version, s.version);
      fresh.set(s.svc_id, current);
      count++;
    }
    this.accounts.set(account, fresh);
    return count;
  }

  health(): Promise<DriverHealth> {
    return Promise.resolve({ driver: 'memory', ready: true });
  }

  close(): Promise<void> {
    this.accounts.clear();
    return Promise.resolve();
  }
}
