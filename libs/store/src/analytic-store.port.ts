import type { DriverHealth } from '@cdp/contracts';

/** A link from an identifier to the customer it identifies; written once, when first seen. */
export interface IdentityLinkRow {
  kind: string;
  value: string;
  svc_id: string;
  msg_id: string;
  created_at: string;
}

/** The full state of a profile after an update; the highest version of a customer is current. */
export interface CustomerRow {
  svc_id: string;
  version: number;
  msg_id: string;
  updated_at: string;
  attributes: Record<string, string | boolean>;
}

export interface EventRow {
  event_id: string;
  msg_id: string;
  svc_id: string;
  ts: string;
  received_at: string;
  type: string;
  action: string;
  channel: string;
  identifiers: Record<string, string>;
  data: Record<string, string | number | boolean>;
  order: string | null;
}

/** Everything one processed batch writes for one account. */
export interface StoreBatch {
  identityLinks: IdentityLinkRow[];
  customers: CustomerRow[];
  events: EventRow[];
}

/**
 * The analytic history of every account (one database each). Writes are idempotent per message:
 * a redelivered message's rows are never stored twice.
 */
export abstract class AnalyticStore {
  /** Creates the account's database and tables if they are missing. */
  abstract ensureAccount(account: string): Promise<void>;
  /**
   * Appends a batch. With `redelivery` set, rows of messages the store already holds are skipped, so
   * a batch that was stored before a crash but never acknowledged is not stored twice.
   */
  abstract write(account: string, batch: StoreBatch, redelivery: boolean): Promise<void>;
  abstract identityLinks(account: string): AsyncIterable<{ kind: string; value: string; svc_id: string }>;
  abstract currentProfiles(
    account: string,
  ): AsyncIterable<{ svc_id: string; version: number; attributes: Record<string, string | boolean> }>;
  /** Runs a select in the account's database: `{db}` in the SQL names it. */
  abstract query<T>(account: string, sql: string, params?: Record<string, unknown>): Promise<T[]>;
  /**
   * Writes a select in the account's database (`{db}` names it) as one Parquet file at a local path,
   * streamed to disk: how exports read the store without holding the rows in memory.
   */
  abstract writeParquet(
    account: string,
    sql: string,
    params: Record<string, unknown>,
    path: string,
  ): Promise<void>;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
