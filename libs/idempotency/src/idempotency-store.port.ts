import type { DriverHealth } from '@cdp/contracts';

/**
 * Where idempotency records live: one opaque value per (account, key), replaced only by
 * compare-and-set, and gone after its expiry. Every API replica must see the same records, and
 * they must survive a restart: a record is what keeps a resent request from being stored twice.
 */
export abstract class IdempotencyStore {
  /** The value held for the key, or undefined when there is none (or it expired). */
  abstract get(account: string, key: string): Promise<string | undefined>;
  /**
   * Replaces the value when the current one is exactly `expected` (undefined: no value), and keeps the
   * new one until `expiresAtMs`; `next` undefined deletes it. False when the value was not `expected`.
   */
  abstract compareAndSet(
    account: string,
    key: string,
    expected: string | undefined,
    next: string | undefined,
    expiresAtMs: number,
  ): Promise<boolean>;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
