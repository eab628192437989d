import type { DriverHealth } from '@cdp/contracts';
import type { Identifier } from '@cdp/domain';

export interface Resolution {
  customerId: string;
  /** True when this call created the customer. */
  created: boolean;
  /** Identifiers this call linked to the customer (they were unknown before). */
  linked: Identifier[];
}

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

/**
 * Maps identifiers to customers. `resolve` handles a whole batch atomically: records are resolved in
 * order, so a later record sees the customers and links an earlier one created.
 */
export abstract class IdentityIndex {
  /** `seeds[i]` derives the id of a customer record i creates (customerIdFromSeed), so replays agree. */
  abstract resolve(account: string, records: Identifier[][], seeds: string[]): Promise<Resolution[]>;
  abstract lookup(account: string, id: Identifier): Promise<string | undefined>;
  /**
   * Starts a rebuild of an account: from now until `load` finishes, `resolve` refuses it with
   * IdentityNotWarmError. False when another process is rebuilding it already.
   */
  abstract beginRebuild(account: string): Promise<boolean>;
  /** Replaces what the index knows of an account with links read back from the store; ends a rebuild. */
  abstract load(
    account: string,
    links: AsyncIterable<{ kind: string; value: string; svc_id: string }>,
  ): Promise<number>;
  /** Whether the index keeps its content across restarts (if not, it is rebuilt from the store at start). */
  abstract readonly persistent: boolean;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
