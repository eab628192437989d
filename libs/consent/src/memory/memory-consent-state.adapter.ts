import type { DriverHealth } from '@cdp/contracts';
import {
  ConsentState,
  type AppliedConsentChange,
  type ConsentChange,
  type ConsentSnapshot,
  type StoredConsent,
} from '../consent-state.port.js';

/** A customer's memberships, with the \`at\` of the change that set each list (for those that had one). */
interface CustomerConsent extends Omit<ConsentSnapshot, 'at'> {
  at?: Record<string, number>;
}

/** The embedded consent state: a map per account, rebuilt from the store's consent history at start. */
export class MemoryConsentState extends ConsentState {
  private readonly accounts = new Map<string, Map<string, CustomerConsent>>();

  private of(account: string): Map<string, CustomerConsent> {
    let customers = this.accounts.get(account);
    if (!customers) this.accounts.set(account, (customers = new Map<string, CustomerConsent>()));
    return customers;
  }

  apply(account: string, changes: ConsentChange[]): Promise<AppliedConsentChange[]> {
    const customers = this.of(account);
    return Promise.resolve(
      changes.map((change): AppliedConsentChange => {
        const current = customers.get(change.customerId);
        const last = current?.at?.[change.listId];
        if (change.at !== undefined && last !== undefined && last >= change.at)
          return { ...change, version: current!.version, stale: true };
        const next: CustomerConsent = {
          customerId: change.customerId,
          version: (current?.version ?? 0) + 1,
          lists: { ...current?.lists, [change.listId]: change.subscribed },
        };
        const at = withAt(current?.at, change.listId, change.at);
        if (at) next.at = at;
        customers.set(change.customerId, next);
        return { ...change, version: next.version };
      }),
    );
  }

  get(account: string, customerId: string): Promise<ConsentSnapshot | undefined> {
    const found = this.accounts.get(account)?.get(customerId);
    return Promise.resolve(found && snapshotOf(found));
  }

  async *customers(account: string): AsyncIterable<ConsentSnapshot> {
    // A copy of the keys: changes applied during the walk do not upset it.
    const customers = this.accounts.get(account);
    for (const id of [...(customers?.keys() ?? [])]) {
      const found = customers!.get(id);
      if (found) yield await Promise.resolve(snapshotOf(found));
    }
  }

  async load(account: string, states: AsyncIterable<StoredConsent>): Promise<number> {
    const fresh = new Map<string, CustomerConsent>();
    let count = 0;
    for await (const s of states) {
      const current: CustomerConsent = fresh.get(s.svc_id) ?? { customerId: s.svc_id, version: 0, lists: {} };
      current.lists[s.list_id] = s.subscribed;
      const at = withAt(current.at, s.list_id, s.at);
      if (at) current.at = at;
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

/** The \`at\` of each list after a change of one: the change's own, or none (an unordered change). */
function withAt(
  at: Record<string, number> | undefined,
  listId: string,
  changeAt: number | undefined,
): Record<string, number> | undefined {
  if (changeAt !== undefined) return { ...at, [listId]: changeAt };
  if (!at || !(listId in at)) return at;
  const rest = { ...at };
  delete rest[listId];
  return rest;
}

function snapshotOf({ customerId, version, lists, at }: CustomerConsent): ConsentSnapshot {
  return { customerId, version, lists: { ...lists }, at: { ...at } };
}
