import type { DriverHealth } from '@cdp/contracts';
import type { ColumnSpec } from './custom-columns.sql.js';
import type {
  CONSENT_HISTORY,
  CUSTOMERS,
  EVENTS,
  IDENTIFIER_UPDATES,
  IDENTITY_CONFLICTS,
  INGEST_REJECTIONS,
  IDENTITY_LINKS,
  IDENTITY_MERGES,
  LINE_ITEMS,
  OPTOUT_POOL,
  OPTOUT_REQUESTS,
  ORDER_CHANGES,
  ORDERS,
  PRODUCTS,
} from './tables/account-tables.js';
import type { RowOf, TableDeclaration } from './tables/table.js';

import type { StoreBatch } from './tables/account-tables.js';

export type { StoreBatch };

// The row of each table, as its declaration (tables/account-tables.ts) gives it.
export type IdentityLinkRow = RowOf<typeof IDENTITY_LINKS>;
export type MergeRow = RowOf<typeof IDENTITY_MERGES>;
export type ConflictRow = RowOf<typeof IDENTITY_CONFLICTS>;
export type CustomerRow = RowOf<typeof CUSTOMERS>;
export type OptOutRequestRow = RowOf<typeof OPTOUT_REQUESTS>;
export type OptOutPoolRow = RowOf<typeof OPTOUT_POOL>;
export type EventRow = RowOf<typeof EVENTS>;
export type ConsentHistoryRow = RowOf<typeof CONSENT_HISTORY>;
export type OrderChangeRow = RowOf<typeof ORDER_CHANGES>;
export type OrderRow = RowOf<typeof ORDERS>;
export type LineItemRow = RowOf<typeof LINE_ITEMS>;
export type ProductRow = RowOf<typeof PRODUCTS>;
export type IdentifierUpdateRow = RowOf<typeof IDENTIFIER_UPDATES>;
export type RejectionRow = RowOf<typeof INGEST_REJECTIONS>;

/** A customer's newest profile snapshot in the store: what the hot profiles are rebuilt from. */
export interface CurrentProfile {
  svc_id: string;
  version: number;
  attributes: Record<string, string | boolean | number>;
  redacted?: boolean;
  /** When each field was last written, in acceptance order (the hot state's field times). */
  times?: Record<string, number>;
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
  /**
   * Crash consistency (README "Durability"): a processor brackets every write of a batch's messages
   * with `begin` (before the first) and `commit` (after the last). A message begun and not committed
   * was cut short by a crash, somewhere between two inserts in whatever order they ran: every read a
   * rebuild makes (identity graph, profiles, memberships, order changes, opt-out pool) leaves its rows
   * out, so the rebuilt state is that of the committed messages exactly, and the message's redelivery
   * resolves as it did the first time and completes every table. Rows written outside a bracket
   * (older data) always count. One exception, profiles (`currentProfiles`): the engine may fold a
   * customer's snapshots into an unfinished message's newer one, so a customer the committed messages
   * know is rebuilt from its newest snapshot, unfinished or not (the redelivery applies the same
   * changes again, to the same result).
   */
  abstract begin(account: string, messages: readonly string[]): Promise<void>;
  /** The last write of these messages: from now on rebuilds count their rows. */
  abstract commit(account: string, messages: readonly string[]): Promise<void>;
  /** Messages begun and not committed: their rows are left out of every rebuild. */
  abstract unfinishedMessages(account: string): Promise<string[]>;
  /**
   * Forgets the brackets of the messages committed before `before` (ms since the epoch), so the
   * commit log holds the bus's redelivery horizon, not the deployment's history. Unfinished messages
   * keep theirs (their rows stay out of rebuilds). Returns how many messages were forgotten.
   */
  abstract pruneCommits(account: string, before: number): Promise<number>;
  /**
   * What the identity index is rebuilt from: every identifier's first link, the born keys lowered
   * without a link, then the merges in order.
   */
  abstract identityGraph(account: string): {
    links: AsyncIterable<{ kind: string; value: string; svc_id: string; born: string }>;
    borns: AsyncIterable<{ svc_id: string; born: string }>;
    merges: AsyncIterable<{ loser: string; survivor: string; seq: number }>;
  };
  abstract currentProfiles(account: string): AsyncIterable<CurrentProfile>;
  /** Adds the columns of custom fields to a built-in table (`events`, `customers`, …) unless present. */
  abstract addColumns(account: string, table: string, columns: readonly ColumnSpec[]): Promise<void>;
  /** Creates an account object's table, or adds the columns of its newer fields. */
  abstract ensureObjectTable(account: string, table: string, columns: readonly ColumnSpec[]): Promise<void>;
  /**
   * Upserts records of an account object (each with `_msg_id` and `_updated_at`); a record changes the
   * fields it carries. With `redelivery`, records of messages already stored are skipped.
   */
  abstract writeObjects(
    account: string,
    table: string,
    rows: readonly ({ _msg_id: string } & Record<string, unknown>)[],
    redelivery: boolean,
  ): Promise<void>;
  /** The latest membership of every customer and list (`svc_all` included), from the consent history. */
  abstract consentStates(
    account: string,
  ): AsyncIterable<{ svc_id: string; list_id: string; subscribed: boolean; version: number; at?: number }>;
  /** Every stored identifier change, by identifier and version: what the identifier state is rebuilt from. */
  abstract identifierUpdates(
    account: string,
  ): AsyncIterable<{ field: string; value: string; version: number; change: string }>;
  /**
   * Every applied order change, each order's in the order they were applied: what the order state is
   * rebuilt from. With `since` (ms since the epoch), only the changes of orders with a change applied
   * since then (every change of each): the state forgets an order its retention after its last change,
   * so older orders would be loaded only to be forgotten.
   */
  abstract orderChanges(account: string, since?: number): AsyncIterable<OrderChangeRow>;
  /** The current rows of the products named (for additive updates). */
  abstract products(account: string, productIds: string[]): Promise<ProductRow[]>;
  /**
   * Removes the personal data of these customers, and of the customers merged into them, from every
   * profile snapshot the store holds (`opted_in` and the bookkeeping columns stay); marks them redacted.
   * Returns once the rows are rewritten.
   */
  abstract redactCustomers(account: string, customerIds: readonly string[]): Promise<void>;
  /**
   * Deletes these events and their line items: purchases that were kept for their order until one
   * accepted before them came (`OrderSnapshot.displacedPurchases`). Returns once the rows are gone;
   * deleting them again is a no-op.
   */
  abstract deleteEvents(account: string, eventIds: readonly string[]): Promise<void>;
  /** Every identifier of the opt-out pool: what the hot pool is rebuilt from. */
  abstract optOutPool(account: string): AsyncIterable<{ kind: string; value: string }>;
  /**
   * Creates tables another library declares in the account's database (the recommendations' derived
   * tables), or brings them up to date, with the same DDL as the account's own tables: on a cluster
   * Replicated tables on every node under Distributed ones sharded by each table's `shardBy`.
   */
  abstract ensureTables(account: string, tables: readonly TableDeclaration[]): Promise<void>;
  /**
   * Adds rejection counts (the API's, summed per minute, outcome, type and reason) to the account's
   * `ingest_rejections`; rows of one write share a `msg_id`, so the same write sent twice is stored once.
   */
  abstract addRejections(account: string, rows: readonly RejectionRow[]): Promise<void>;
  /** Runs a statement that returns nothing (DDL, `INSERT … SELECT`) in the account's database (`{db}`). */
  abstract execute(account: string, sql: string): Promise<void>;
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
