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
 * Maps identifiers to customers. `resolve` handles a whole batch atomically: records are resolved in
 * order, so a later record sees the customers and links an earlier one created.
 */
export abstract class IdentityIndex {
  abstract resolve(
    account: string,
    records: Identifier[][],
    newCustomerId: (index: number) => string,
  ): Promise<Resolution[]>;
  abstract lookup(account: string, id: Identifier): Promise<string | undefined>;
  /** Replaces what the index knows of an account with links read back from the store. */
  abstract load(
    account: string,
    links: AsyncIterable<{ kind: string; value: string; svc_id: string }>,
  ): Promise<number>;
  /** Whether the index keeps its content across restarts (if not, it is rebuilt from the store at start). */
  abstract readonly persistent: boolean;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
