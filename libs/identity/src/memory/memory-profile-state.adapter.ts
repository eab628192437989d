import type { DriverHealth } from '@cdp/contracts';
import { applyAttributeUpdate, type AttributeUpdate, type Attributes } from '@cdp/domain';
import { ProfileState, type ProfileSnapshot } from '../profile-state.port.js';

/** The embedded hot profile state: a map per account, rebuilt from the store's latest snapshots at start. */
export class MemoryProfileState extends ProfileState {
  private readonly accounts = new Map<string, Map<string, ProfileSnapshot>>();

  private of(account: string): Map<string, ProfileSnapshot> {
    let profiles = this.accounts.get(account);
    if (!profiles) this.accounts.set(account, (profiles = new Map<string, ProfileSnapshot>()));
    return profiles;
  }

  apply(
    account: string,
    updates: { customerId: string; update: AttributeUpdate }[],
  ): Promise<ProfileSnapshot[]> {
    const profiles = this.of(account);
    const changed = new Map<string, ProfileSnapshot>();
    for (const { customerId, update } of updates) {
      const current = profiles.get(customerId);
      const next: ProfileSnapshot = {
        customerId,
        version: (current?.version ?? 0) + 1,
        attributes: applyAttributeUpdate(current?.attributes ?? {}, update),
      };
      profiles.set(customerId, next);
      changed.set(customerId, next);
    }
    return Promise.resolve([...changed.values()]);
  }

  get(account: string, customerId: string): Promise<ProfileSnapshot | undefined> {
    return Promise.resolve(this.accounts.get(account)?.get(customerId));
  }

  async load(
    account: string,
    profiles: AsyncIterable<{ svc_id: string; version: number; attributes: Attributes }>,
  ): Promise<number> {
    const fresh = new Map<string, ProfileSnapshot>();
    for await (const p of profiles) {
      fresh.set(p.svc_id, { customerId: p.svc_id, version: p.version, attributes: p.attributes });
    }
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
