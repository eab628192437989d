import type { DriverHealth } from '@cdp/contracts';
import {
  applyAttributeUpdate,
  identityKey,
  type AttributeUpdate,
  type Attributes,
  type Identifier,
} from '@cdp/domain';
import {
  ProfileState,
  REDACTED_ATTRIBUTES,
  REDACTED_WRITABLE,
  type ProfileSnapshot,
  type ProfileUpdate,
  type StoredProfile,
} from '../profile-state.port.js';

interface AccountState {
  profiles: Map<string, ProfileSnapshot>;
  /** phone value -> customers whose profile holds exactly it. */
  phones: Map<string, Set<string>>;
  /** identityKey of every identifier in the opt-out pool. */
  pool: Set<string>;
}

/** The embedded hot profile state: a map per account, rebuilt from the store's latest snapshots at start. */
export class MemoryProfileState extends ProfileState {
  private readonly accounts = new Map<string, AccountState>();

  private of(account: string): AccountState {
    let state = this.accounts.get(account);
    if (!state) {
      state = { profiles: new Map(), phones: new Map(), pool: new Set() };
      this.accounts.set(account, state);
    }
    return state;
  }

  apply(account: string, updates: ProfileUpdate[]): Promise<ProfileSnapshot[]> {
    const state = this.of(account);
    const { profiles } = state;
    const changed = new Map<string, ProfileSnapshot>();
    const gone: ProfileSnapshot[] = [];
    for (const { customerId, update, absorb = [], redact = false } of updates) {
      const current = profiles.get(customerId);
      let attributes = { ...(current?.attributes ?? {}) };
      let redacted = current?.redacted === true || redact;
      for (const loser of absorb) {
        const last = profiles.get(loser);
        if (!last) continue;
        attributes = { ...last.attributes, ...attributes };
        redacted ||= last.redacted === true;
        profiles.delete(loser);
        this.indexPhone(state, loser, last.attributes.phone, undefined);
        changed.delete(loser);
        gone.push({ ...last, version: last.version + 1, mergedInto: customerId });
      }
      const next: ProfileSnapshot = {
        customerId,
        version: (current?.version ?? 0) + 1,
        attributes: redacted
          ? applyAttributeUpdate(redactedBase(current), writableWhenRedacted(update))
          : applyAttributeUpdate(attributes, update),
      };
      if (redacted) next.redacted = true;
      profiles.set(customerId, next);
      this.indexPhone(state, customerId, current?.attributes.phone, next.attributes.phone);
      changed.set(customerId, next);
    }
    return Promise.resolve([...gone, ...changed.values()]);
  }

  private indexPhone(state: AccountState, customerId: string, before: unknown, after: unknown): void {
    if (before === after) return;
    if (typeof before === 'string') {
      const set = state.phones.get(before);
      set?.delete(customerId);
      if (set?.size === 0) state.phones.delete(before);
    }
    if (typeof after === 'string') {
      let set = state.phones.get(after);
      if (!set) state.phones.set(after, (set = new Set()));
      set.add(customerId);
    }
  }

  get(account: string, customerId: string): Promise<ProfileSnapshot | undefined> {
    return Promise.resolve(this.accounts.get(account)?.profiles.get(customerId));
  }

  async load(account: string, profiles: AsyncIterable<StoredProfile>): Promise<number> {
    const state: AccountState = {
      profiles: new Map(),
      phones: new Map(),
      pool: this.accounts.get(account)?.pool ?? new Set(),
    };
    for await (const p of profiles) {
      const snapshot: ProfileSnapshot = {
        customerId: p.svc_id,
        version: p.version,
        attributes: p.attributes,
      };
      if (p.redacted) snapshot.redacted = true;
      state.profiles.set(p.svc_id, snapshot);
      this.indexPhone(state, p.svc_id, undefined, p.attributes.phone);
    }
    this.accounts.set(account, state);
    return state.profiles.size;
  }

  customersWithPhone(account: string, phone: string): Promise<string[]> {
    return Promise.resolve([...(this.accounts.get(account)?.phones.get(phone) ?? [])].sort());
  }

  addToOptOutPool(account: string, ids: readonly Identifier[]): Promise<void> {
    const { pool } = this.of(account);
    for (const id of ids) pool.add(identityKey(id));
    return Promise.resolve();
  }

  inOptOutPool(account: string, ids: readonly Identifier[]): Promise<Identifier[]> {
    const pool = this.accounts.get(account)?.pool;
    return Promise.resolve(pool ? ids.filter((id) => pool.has(identityKey(id))) : []);
  }

  async loadOptOutPool(account: string, ids: AsyncIterable<Identifier>): Promise<number> {
    const pool = new Set<string>();
    for await (const id of ids) pool.add(identityKey(id));
    this.of(account).pool = pool;
    return pool.size;
  }

  health(): Promise<DriverHealth> {
    return Promise.resolve({ driver: 'memory', ready: true });
  }

  close(): Promise<void> {
    this.accounts.clear();
    return Promise.resolve();
  }
}

/**
 * What a redacted profile starts from: nothing personal, `opted_in` false — except that a profile
 * redacted before keeps the `opted_in` it was given since (an explicit channel opt-in): redacting it
 * again changes nothing, so a record of a pooled identifier does not undo that opt-in.
 */
function redactedBase(current: ProfileSnapshot | undefined): Attributes {
  const kept = current?.redacted ? current.attributes[REDACTED_WRITABLE] : undefined;
  return kept === undefined ? { ...REDACTED_ATTRIBUTES } : { [REDACTED_WRITABLE]: kept };
}

/** What an update may still change on a redacted profile: `opted_in` only. */
export function writableWhenRedacted(update: AttributeUpdate): AttributeUpdate {
  return Object.hasOwn(update, REDACTED_WRITABLE)
    ? { [REDACTED_WRITABLE]: update[REDACTED_WRITABLE] ?? null }
    : {};
}
