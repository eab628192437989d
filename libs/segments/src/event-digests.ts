import type { EventCondition, EventTally } from './segment.js';

export const DAY_MS = 86_400_000;

/** One stored event as a segment condition reads it: what it is, when, and its order's total. */
export interface DigestEntry {
  type: string;
  action: string;
  /** The event's time, milliseconds since the epoch. */
  ts: number;
  /** The order's `total` in the store's exact 1/10000 units (0 without one). */
  units: number;
}

/** Which events an account's digests hold: those of these types since `from` (ms). */
export interface DigestScope {
  types: ReadonlySet<string>;
  from: number;
}

/**
 * One account's digests: for every customer, its stored events of the scope's types since the scope's
 * start, keyed by event id (a redelivered message's events are the same ids: adding them again changes
 * nothing). `complete` once built from the store: from then on a customer with no digest has no such
 * event, and events stored after the build are added as their writes commit.
 */
class AccountDigests {
  readonly customers = new Map<string, Map<string, DigestEntry>>();
  entries = 0;
  /** When a lookup last read them: digests nobody reads are dropped rather than kept growing. */
  usedAt: number;

  constructor(
    readonly scope: DigestScope,
    readonly builtAt: number,
  ) {
    this.usedAt = builtAt;
  }

  /** Adds an event in scope; 1 when it is new (not a redelivered one), else 0. */
  add(customer: string, eventId: string, entry: DigestEntry): number {
    if (!this.scope.types.has(entry.type) || entry.ts < this.scope.from) return 0;
    let events = this.customers.get(customer);
    if (!events) this.customers.set(customer, (events = new Map<string, DigestEntry>()));
    const added = events.has(eventId) ? 0 : 1;
    this.entries += added;
    events.set(eventId, entry);
    return added;
  }

  covers(conditions: readonly EventCondition[], now: number): boolean {
    return conditions.every(
      (c) => this.scope.types.has(c.type) && now - c.within_days * DAY_MS >= this.scope.from,
    );
  }
}

/** An account's build in progress: events stored while its query runs are added once it ends. */
interface Building {
  scope: DigestScope;
  stored: [string, string, DigestEntry][];
  failed: boolean;
}

/**
 * Per customer, the stored events segment conditions count (docs/architecture.md "Audiences"): the
 * precomputed half of an audience lookup, held by the process that writes the store, so that a lookup
 * counts in memory instead of querying the store. The passage of time needs no bookkeeping (each
 * event's time is kept: a window is counted at read, to the millisecond, as the store query does);
 * merges neither (a lookup reads the survivor's and every absorbed customer's digest, as it reads their
 * events); a restart starts empty and an account is built from the store again at its first lookup.
 */
export class EventDigests {
  private readonly accounts = new Map<string, AccountDigests>();
  private readonly building = new Map<string, Building>();
  /** Events held over every account (the sum of their `entries`). */
  private held = 0;

  constructor(
    /** An account with more events in scope than this is not digested (its lookups query the store). */
    readonly maxEntriesPerAccount = 2_000_000,
    /**
     * Every account's together. A build that would pass it is not kept, and an account whose stored
     * events take the total past it is dropped (its lookups query the store until it is built again).
     */
    readonly maxEntries = 10_000_000,
    /** Digests no lookup read for this long are dropped when their next events are stored. */
    readonly idleMs = 3_600_000,
  ) {}

  /** Events held over every account. */
  size(): number {
    return this.held;
  }

  /** The account's digests if they cover every condition at `now`; undefined otherwise. */
  usable(account: string, conditions: readonly EventCondition[], now: number): AccountDigests | undefined {
    const digests = this.accounts.get(account);
    if (digests) digests.usedAt = now;
    return digests?.covers(conditions, now) ? digests : undefined;
  }

  private drop(account: string): void {
    const digests = this.accounts.get(account);
    if (!digests) return;
    this.held -= digests.entries;
    this.accounts.delete(account);
  }

  builtAt(account: string): number | undefined {
    return this.accounts.get(account)?.builtAt;
  }

  /**
   * The scope a build for these conditions takes: theirs and the current digests' together. The current
   * window keeps its width, not its start: a rebuild an hour later starts an hour later, so the digests
   * hold the widest window asked, not everything since the first build.
   */
  scopeFor(account: string, conditions: readonly EventCondition[], now: number): DigestScope {
    const current = this.accounts.get(account);
    const widest = Math.max(...conditions.map((c) => c.within_days));
    const currentFrom = current ? now - (current.builtAt - current.scope.from) : Infinity;
    return {
      types: new Set([...(current?.scope.types ?? []), ...conditions.map((c) => c.type)]),
      from: Math.min(now - widest * DAY_MS, currentFrom),
    };
  }

  /**
   * Builds an account's digests from `load` (its stored events in scope, read once). Events stored while
   * the query runs are remembered and added after it (they may be in its answer too: same ids). A write
   * that fails meanwhile, or an account over the bound, leaves the account without digests.
   */
  async build(
    account: string,
    scope: DigestScope,
    load: () => Promise<[string, string, DigestEntry][]>,
    now: number,
  ): Promise<void> {
    if (this.building.has(account)) return;
    const building: Building = { scope, stored: [], failed: false };
    this.building.set(account, building);
    try {
      const rows = await load();
      const size = rows.length + building.stored.length;
      const usedAt = this.accounts.get(account)?.usedAt ?? now;
      this.drop(account);
      if (building.failed || size > this.maxEntriesPerAccount || this.held + size > this.maxEntries) return;
      const digests = new AccountDigests(scope, now);
      digests.usedAt = usedAt;
      for (const [customer, eventId, entry] of rows) digests.add(customer, eventId, entry);
      for (const [customer, eventId, entry] of building.stored) digests.add(customer, eventId, entry);
      this.accounts.set(account, digests);
      this.held += digests.entries;
    } finally {
      this.building.delete(account);
    }
  }

  /** Events whose store write committed: added to their customers' digests (idempotent by event id). */
  stored(account: string, events: readonly [string, string, DigestEntry][], now = Date.now()): void {
    this.building.get(account)?.stored.push(...events);
    const digests = this.accounts.get(account);
    if (!digests) return;
    for (const [customer, eventId, entry] of events) this.held += digests.add(customer, eventId, entry);
    if (
      digests.entries > this.maxEntriesPerAccount ||
      this.held > this.maxEntries ||
      now - digests.usedAt > this.idleMs
    )
      this.drop(account);
  }

  /**
   * A write that failed may have stored some of its events all the same: the account's digests can no
   * longer say which, so they go (and a build under way is dropped); the next lookup builds them again.
   */
  uncertain(account: string): void {
    this.drop(account);
    const building = this.building.get(account);
    if (building) building.failed = true;
  }

  /** Each condition's tally over the customers' digests (the survivor's and its absorbed customers'). */
  tallies(
    digests: AccountDigests,
    customers: readonly string[],
    conditions: readonly EventCondition[],
    now: number,
  ): EventTally[] {
    const out = conditions.map(() => ({ count: 0, units: 0 }));
    for (const customer of customers) {
      const events = digests.customers.get(customer);
      if (!events) continue;
      for (const e of events.values())
        conditions.forEach((c, i) => {
          // As the store query counts: an event less than `within_days` days old, or stamped ahead of now.
          if (e.type !== c.type || now - e.ts >= c.within_days * DAY_MS) return;
          if (c.action !== undefined && e.action !== c.action) return;
          out[i]!.count++;
          out[i]!.units += e.units;
        });
    }
    return out.map((t) => ({ count: t.count, total: t.units / 1e4 }));
  }
}
