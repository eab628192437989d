import type { DriverHealth } from '@cdp/contracts';
import type { Identifier } from '@cdp/domain';
import type { ResolveInput, Resolution } from './resolution.js';

/**
 * Raised when the index does not hold an account's links (a flushed or new Redis): resolving now
 * would split known customers, so the caller rebuilds the index from the store first.
 */
export class IdentityNotWarmError extends Error {
  override name = 'IdentityNotWarmError';
  constructor(readonly account: string) {
    super(`the identity index holds nothing for account ${account}; it must be rebuilt from the store`);
  }
}

/** What the store keeps of the identity graph, read back to rebuild an index. */
export interface IdentityGraphRows {
  /**
   * Each identifier with the customer it was first linked to, and that customer's born key then. A
   * customer's born key is the least of its links' and its `borns'`.
   */
  links: AsyncIterable<{ kind: string; value: string; svc_id: string; born: string }>;
  /**
   * Customers whose born key a record lowered without linking anything (it was accepted before the
   * customer's other records and processed after them), each with the least such key.
   */
  borns: AsyncIterable<{ svc_id: string; born: string }>;
  /** Every merge in the order it happened (seq): the loser's history belongs to the survivor since. */
  merges: AsyncIterable<{ loser: string; survivor: string; seq: number }>;
}

/** A customer found by one of its identifiers. */
export interface FoundIdentity {
  customerId: string;
  /** The customers merged into it, directly or through others (in no particular order). */
  absorbed: string[];
}

/**
 * Maps identifiers to customers and merges customers (the rules: resolution.ts). `resolve` handles a
 * whole batch atomically: records are resolved in order, so a later record sees what an earlier one did.
 *
 * The effects of a message (customers created, identifiers linked, merges) are remembered until the
 * caller `settle`s it, after the store holds them: a message redelivered before that (a crash, a failed
 * store write) gets the same resolutions again, so its effects reach the store exactly once.
 */
export abstract class IdentityIndex {
  abstract resolve(account: string, records: ResolveInput[]): Promise<Resolution[]>;
  /** Forgets the remembered effects of messages whose rows the store now holds. */
  abstract settle(account: string, messages: string[]): Promise<void>;
  /** The customer an identifier resolves to now (a merged customer's identifiers give the survivor). */
  abstract lookup(account: string, id: Identifier): Promise<string | undefined>;
  /** The customers merged into a customer, directly or through others (in no particular order). */
  abstract absorbedBy(account: string, customerId: string): Promise<string[]>;
  /**
   * `lookup` and `absorbedBy` together: the customer an identifier resolves to now and the customers
   * merged into it, or undefined. A read that needs both (a profile, the audiences) asks this, which an
   * index over the network answers in one round trip.
   */
  async find(account: string, id: Identifier): Promise<FoundIdentity | undefined> {
    const customerId = await this.lookup(account, id);
    return customerId === undefined
      ? undefined
      : { customerId, absorbed: await this.absorbedBy(account, customerId) };
  }
  /** Every identifier of a customer (and of the customers merged into it). */
  abstract identifiersOf(account: string, customerId: string): Promise<Identifier[]>;
  /**
   * Starts a rebuild of an account: from now until `load` finishes, `resolve` refuses it with
   * IdentityNotWarmError. False when another process is rebuilding it already.
   */
  abstract beginRebuild(account: string): Promise<boolean>;
  /**
   * Closes an account as a flush would: its next `resolve` refuses it (IdentityNotWarmError), so it is
   * rebuilt from the store. For another part of its hot state found not loaded (profiles on a shard a
   * failover or an upgrade left without its ready marker) while the index still holds the account.
   */
  abstract closeAccount(account: string): Promise<void>;
  /** Replaces what the index knows of an account with the graph read back from the store; ends a rebuild. */
  abstract load(account: string, graph: IdentityGraphRows): Promise<number>;
  /**
   * Called once a rebuild begun by `beginRebuild` is over, whether `load` ran or the rebuild failed
   * before it: a rebuild's lock is held (and kept alive) until then, and released if `load` did not open
   * the account.
   */
  abstract endRebuild(account: string): Promise<void>;
  /** Whether the index keeps its content across restarts (if not, it is rebuilt from the store at start). */
  abstract readonly persistent: boolean;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
