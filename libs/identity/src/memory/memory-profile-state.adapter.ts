import type { DriverHealth } from '@cdp/contracts';
import { applyAttributeUpdate, type Attributes } from '@cdp/domain';
import { ProfileState, type ProfileSnapshot, type ProfileUpdate } from '../profile-state.port.js';

/** The embedded hot profile state: a map per account, rebuilt from the store's latest snapshots at start. */
export class MemoryProfileState extends ProfileState {
  private readonly accounts = new Map<string, Map<string, ProfileSnapshot>>();

  private of(account: string): Map<string, ProfileSnapshot> {
    let profiles = this.accounts.get(account);
    if (!profiles) this.accounts.set(account, (profiles = new Map<string, ProfileSnapshot>()));
    return profiles;
  }

  apply(account: string, updates: ProfileUpdate[]): Promise<ProfileSnapshot[]> {
    const profiles = this.of(account);
    const changed = new Map<string, ProfileSnapshot>();
    const gone: ProfileSnapshot[] = [];
    for (const { customerId, update, absorb = [] } of updates) {
      let attributes = { ...(profiles.get(customerId)?.attributes ?? {}) };
      for (const loser of absorb) {
        const last = profiles.get(loser);
        if (!last) continue;
        attributes = { ...last.attributes, ...attributes };
        profiles.delete(loser);
        changed.delete(loser);
        gone.push({ ...last, version: last.version + 1, mergedInto: customerId });
      }
      const next: ProfileSnapshot = {
        customerId,
        version: (profiles.get(customerId)?.version ?? 0) + 1,
        attributes: applyAttributeUpdate(attributes, update),
      };
      profiles.set(customerId, next);
      changed.set(customerId, next);
    }
    return Promise.resolve([...gone, ...changed.values()]);
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
