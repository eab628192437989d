import type { DriverHealth } from '@cdp/contracts';

/** One change of a customer's membership of a list. */
export interface ConsentChange {
  customerId: string;
  listId: string;
  subscribed: boolean;
  /**
   * The change's place in the order the bus accepted it (a number that grows with the acceptance order,
   * the same for a redelivery). Given, the change is applied only if it is newer than the last change of
   * the customer's list applied with one: a change redelivered after a crash, or applied late by another
   * processor, never undoes a newer one, so the memberships end as acceptance order gives them.
   */
  at?: number;
}

/**
 * A change as applied: `version` counts the changes of the customer's consent, so replays can be
 * ordered. `stale`: a newer change of the list (by `at`) was applied already; this one changed nothing.
 */
export interface AppliedConsentChange extends ConsentChange {
  version: number;
  stale?: true;
}

/** A membership as the store holds it, read back to rebuild the state (`at` as the change carried it). */
export interface StoredConsent {
  svc_id: string;
  list_id: string;
  subscribed: boolean;
  version: number;
  at?: number;
}

export interface ConsentSnapshot {
  customerId: string;
  version: number;
  /** Membership of every list the customer was ever added to or removed from. */
  lists: Record<string, boolean>;
  /** The \`at\` of the change that set each list, for the lists whose change had one. */
  at: Record<string, number>;
}

/**
 * The hot list memberships of every customer: what `GET /v3/lists/subscriptions` reads. Everything
 * in it can be rebuilt from the store's consent history (`load`). Changes of `svc_all` are kept like
 * any list's, but reads of the global status use the profile's `opted_in`: one truth, which
 * `POST /v3/profiles` may change too.
 */
export abstract class ConsentState {
  /**
   * Applies changes in order, atomically (a change older by \`at\` than its list's last is skipped as
   * stale); returns each with the customer's version after it.
   */
  abstract apply(account: string, changes: ConsentChange[]): Promise<AppliedConsentChange[]>;
  abstract get(account: string, customerId: string): Promise<ConsentSnapshot | undefined>;
  /**
   * Every customer of the account with a membership decision, each with its own decisions only (those of
   * customers merged into it are theirs: a reader combines them, as `GET /v3/lists/subscriptions` does).
   * In no particular order; a customer changed during the walk may come with either state.
   */
  abstract customers(account: string): AsyncIterable<ConsentSnapshot>;
  /**
   * Replaces what the state holds of an account with the latest membership of each customer and list,
   * given a customer's memberships together (so a driver need not hold anything per customer).
   */
  abstract load(account: string, states: AsyncIterable<StoredConsent>): Promise<number>;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
