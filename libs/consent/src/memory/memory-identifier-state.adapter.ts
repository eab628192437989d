import type { DriverHealth } from '@cdp/contracts';
import {
  applyIdentifierChange,
  IdentifierState,
  replayIdentifierChanges,
  type IdentifierChange,
  type IdentifierStatus,
  type StoredIdentifierChange,
} from '../identifier-state.port.js';

const keyOf = (field: string, value: string) => `${field}\u0000${value}`;

/** The embedded identifier state: a map per account, rebuilt from the store at start. */
export class MemoryIdentifierState extends IdentifierState {
  private readonly accounts = new Map<string, Map<string, IdentifierStatus>>();

  private of(account: string): Map<string, IdentifierStatus> {
    let ids = this.accounts.get(account);
    if (!ids) this.accounts.set(account, (ids = new Map<string, IdentifierStatus>()));
    return ids;
  }

  apply(account: string, changes: IdentifierChange[]): Promise<number[]> {
    const ids = this.of(account);
    return Promise.resolve(
      changes.map((change) => {
        const key = keyOf(change.field, change.value);
        const next = applyIdentifierChange(ids.get(key) ?? { version: 0 }, change);
        ids.set(key, next);
        return next.version;
      }),
    );
  }

  get(account: string, field: string, value: string): Promise<IdentifierStatus | undefined> {
    const found = this.accounts.get(account)?.get(keyOf(field, value));
    return Promise.resolve(found && structuredClone(found));
  }

  async load(account: string, changes: AsyncIterable<StoredIdentifierChange>): Promise<number> {
    const fresh = new Map<string, IdentifierStatus>();
    for await (const { field, value, status } of replayIdentifierChanges(changes))
      fresh.set(keyOf(field, value), status);
    this.accounts.set(account, fresh);
    return fresh.size;
  }

  health(): Promise<DriverHealth> {
    return Promise.resolve({ driver: 'memory', ready: true });
  }

  close(): Promise<void> {
    this.accounts.clear();
    return Promise.resolve();
  }
}
