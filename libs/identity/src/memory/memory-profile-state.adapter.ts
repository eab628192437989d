import type { DriverHealth } from '@cdp/contracts';
import {
  applyAttributeUpdate,
  applyProfileUpdate,
  identityKey,
  type AttributeUpdate,
  type Attributes,
  type Identifier,
} from '@cdp/domain';
import {
  ProfileState,
  REDACTED_WRITABLE,
  type ProfileSnapshot,
  type ProfileUpdate,
  type StoredProfile,
} from '../profile-state.port.js';
import { foldFields, foldedProfile, redactedBase } from '../profile-fold.js';
import { newerFields, stamped, type FieldTimes } from '../field-order.js';
import { InternedStrings, grown, resized } from './interned-strings.js';

/**
 * One account's hot profiles, compact: customers are interned (their id text once, in an arena) and
 * numbered; a profile is a version, two flags and its attributes as JSON text (one flat V8 string,
 * ~40 bytes for an email, where an attributes object and a snapshot object cost ~150). A snapshot
 * is decoded when it is read or changed.
 */
class AccountProfiles {
  readonly customers = new InternedStrings();
  private versions = new Float64Array(8);
  private flags = new Uint8Array(8);
  /** customer → attributes as JSON text ('' for none). */
  private readonly attributes: string[] = [];
  /** customer → when each field was last written (FieldTimes as JSON text, '' for none). */
  private readonly times: string[] = [];
  /** phone value → customers whose profile holds exactly it. */
  readonly phones = new Map<string, Set<number>>();
  private count = 0;

  constructor(
    /** identityKey of every identifier in the opt-out pool. */
    public pool: Set<string> = new Set(),
  ) {}

  get size(): number {
    return this.count;
  }

  /** The customer's number, or -1 when it has no profile. */
  find(customerId: string): number {
    const c = this.customers.find(0, customerId);
    return c >= 0 && this.flags[c]! & PRESENT ? c : -1;
  }

  read(c: number, customerId = this.customers.text(c)): ProfileSnapshot {
    const snapshot: ProfileSnapshot = {
      customerId,
      version: this.versions[c]!,
      attributes: decode(this.attributes[c]!),
    };
    if (this.flags[c]! & REDACTED) snapshot.redacted = true;
    if (this.times[c]) snapshot.times = this.timesOf(c);
    return snapshot;
  }

  timesOf(c: number): FieldTimes {
    const text = this.times[c];
    return text ? (JSON.parse(text) as FieldTimes) : {};
  }

  write(
    customerId: string,
    version: number,
    attributes: Attributes,
    redacted: boolean,
    times: FieldTimes = {},
  ): number {
    const c = this.customers.intern(0, customerId);
    if (c >= this.versions.length) {
      const size = grown(this.versions.length);
      this.versions = resized(this.versions, size);
      this.flags = resized(this.flags, size);
    }
    if (!(this.flags[c]! & PRESENT)) this.count++;
    this.versions[c] = version;
    this.flags[c] = PRESENT | (redacted ? REDACTED : 0);
    this.attributes[c] = encode(attributes);
    this.times[c] = encode(times);
    return c;
  }

  /**
   * Merged away: no profile any more, but its last snapshot is kept (it was held anyway), so that a
   * write retried after a failure absorbs it again into the same merged row (`merged`).
   */
  retire(c: number): void {
    if (!(this.flags[c]! & PRESENT)) return;
    this.flags[c] = MERGED | (this.flags[c]! & REDACTED);
    this.count--;
  }

  /** The number of a customer merged away, or -1. */
  merged(customerId: string): number {
    const c = this.customers.find(0, customerId);
    return c >= 0 && this.flags[c]! & MERGED ? c : -1;
  }
}

const PRESENT = 1;
const REDACTED = 2;
const MERGED = 4;

/** Attributes as stored: values are strings, numbers and booleans, which JSON keeps exactly. */
function encode(attributes: Attributes): string {
  for (const _ in attributes) return JSON.stringify(attributes);
  return '';
}

function decode(text: string): Attributes {
  return text === '' ? {} : (JSON.parse(text) as Attributes);
}

/** The embedded hot profile state: compact per account, rebuilt from the store's latest snapshots at start. */
export class MemoryProfileState extends ProfileState {
  private readonly accounts = new Map<string, AccountProfiles>();

  private of(account: string): AccountProfiles {
    let state = this.accounts.get(account);
    if (!state) this.accounts.set(account, (state = new AccountProfiles()));
    return state;
  }

  apply(account: string, updates: ProfileUpdate[]): Promise<ProfileSnapshot[]> {
    const state = this.of(account);
    const changed = new Map<string, ProfileSnapshot>();
    const gone: ProfileSnapshot[] = [];
    for (const { customerId, update, absorb = [], redact = false, at } of updates) {
      const own = state.find(customerId);
      const current = own >= 0 ? state.read(own, customerId) : undefined;
      let attributes = current?.attributes ?? {};
      let times = own >= 0 ? state.timesOf(own) : {};
      let redacted = current?.redacted === true || redact;
      for (const loser of absorb) {
        const l = state.find(loser);
        if (l < 0) {
          // Absorbed already (the write that followed failed and is retried): the same merged row again.
          const m = state.merged(loser);
          if (m < 0) continue;
          const last = state.read(m, loser);
          gone.push({ ...last, version: last.version + 1, mergedInto: customerId });
          continue;
        }
        const last = state.read(l, loser);
        ({ attributes, times } = foldFields(
          { attributes, times },
          { attributes: last.attributes, times: state.timesOf(l) },
        ));
        redacted ||= last.redacted === true;
        state.retire(l);
        this.indexPhone(state, l, last.attributes.phone, undefined);
        changed.delete(loser);
        gone.push({ ...last, version: last.version + 1, mergedInto: customerId });
      }
      // Fields a record accepted later wrote already keep their value (last writer by acceptance order).
      const fresh = newerFields(update, times, at);
      const written = redacted ? writableWhenRedacted(fresh) : fresh;
      const next: ProfileSnapshot = {
        customerId,
        version: (current?.version ?? 0) + 1,
        attributes: redacted
          ? applyAttributeUpdate(redactedBase(current), written)
          : applyProfileUpdate(attributes, written),
      };
      if (redacted) next.redacted = true;
      const nextTimes = stamped(times, written, at);
      if (Object.keys(nextTimes).length) next.times = nextTimes;
      const c = state.write(customerId, next.version, next.attributes, redacted, nextTimes);
      this.indexPhone(state, c, current?.attributes.phone, next.attributes.phone);
      changed.set(customerId, next);
    }
    return Promise.resolve([...gone, ...changed.values()]);
  }

  private indexPhone(state: AccountProfiles, customer: number, before: unknown, after: unknown): void {
    if (before === after) return;
    if (typeof before === 'string') {
      const set = state.phones.get(before);
      set?.delete(customer);
      if (set?.size === 0) state.phones.delete(before);
    }
    if (typeof after === 'string') {
      let set = state.phones.get(after);
      if (!set) state.phones.set(after, (set = new Set()));
      set.add(customer);
    }
  }

  get(
    account: string,
    customerId: string,
    absorbed: readonly string[] = [],
  ): Promise<ProfileSnapshot | undefined> {
    const state = this.accounts.get(account);
    if (!state) return Promise.resolve(undefined);
    const read = (customer: string) => {
      const c = state.find(customer);
      return c >= 0 ? state.read(c, customer) : undefined;
    };
    const unfolded = absorbed.map(read).filter((s) => s !== undefined);
    return Promise.resolve(foldedProfile(customerId, read(customerId), unfolded));
  }

  async load(account: string, profiles: AsyncIterable<StoredProfile>): Promise<number> {
    const state = new AccountProfiles(this.accounts.get(account)?.pool);
    for await (const p of profiles) {
      const c = state.write(p.svc_id, p.version, p.attributes, p.redacted === true, p.times);
      this.indexPhone(state, c, undefined, p.attributes.phone);
    }
    this.accounts.set(account, state);
    return state.size;
  }

  customersWithPhone(account: string, phone: string): Promise<string[]> {
    const state = this.accounts.get(account);
    const customers = state?.phones.get(phone) ?? [];
    return Promise.resolve([...customers].map((c) => state!.customers.text(c)).sort());
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

/** What an update may still change on a redacted profile: `opted_in` only. */
export function writableWhenRedacted(update: AttributeUpdate): AttributeUpdate {
  return Object.hasOwn(update, REDACTED_WRITABLE)
    ? { [REDACTED_WRITABLE]: update[REDACTED_WRITABLE] ?? null }
    : {};
}
