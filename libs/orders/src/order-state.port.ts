import type { DriverHealth } from '@cdp/contracts';
import type { OrderChange, OrderSnapshot } from '@cdp/domain';

/** What became of one change (see `applyOrderChange` in @cdp/domain). */
export interface ChangeOutcome {
  /** True when this call applied it; false for a change applied before, or an update of a missing order. */
  applied: boolean;
  /** The order version the change produced when it was first applied; 0 when it never was. */
  seq: number;
  /** Whether the change is recorded as an event (with line items). */
  recorded: boolean;
  /**
   * Set for an entity update kept until an order event accepted before it is applied (`seq` 0 until then):
   * the caller stores it in the change log, so a rebuild keeps it pending too.
   */
  pending?: true;
}

export interface ApplyResult {
  /** One outcome per change, in order. */
  outcomes: ChangeOutcome[];
  /** The state of every order the batch touched, after the whole batch. */
  orders: OrderSnapshot[];
}

/**
 * Raised when the state does not hold an account's orders (a flushed or new Redis): applying now
 * would forget purchases and applied event ids, so the caller rebuilds the account from the store.
 */
export class OrdersNotWarmError extends Error {
  override name = 'OrdersNotWarmError';
  constructor(readonly account: string) {
    super(`the order state holds nothing for account ${account}; it must be rebuilt from the store`);
  }
}

/**
 * The hot state of every order: running tally, kept purchase, last field values, and the ids of the
 * changes already applied (so a redelivered message never moves a tally twice). `apply` takes a batch
 * in order, each order's changes atomically (orders are independent: Redis applies each account shard's
 * orders in a call of their own); two processors never interleave inside one order's changes of a call.
 */
export abstract class OrderState {
  abstract apply(account: string, changes: OrderChange[]): Promise<ApplyResult>;
  abstract get(account: string, orderId: string): Promise<OrderSnapshot | undefined>;
  /** Starts a rebuild: until `load` ends it, `apply` refuses the account. False when another process holds it. */
  abstract beginRebuild(account: string): Promise<boolean>;
  /**
   * Replaces an account's orders with the changes read back from the store (each order's changes in the
   * order they were first applied), and opens the account again. Returns the number of changes.
   */
  abstract load(account: string, changes: AsyncIterable<OrderChange>): Promise<number>;
  /** Called once a rebuild begun by `beginRebuild` is over, loaded or failed: frees what it held. */
  abstract endRebuild(account: string): Promise<void>;
  /** Whether the state survives a restart (if not, it is rebuilt from the store at start). */
  abstract readonly persistent: boolean;
  /**
   * How long an order is kept after its last applied change (CDP_ORDER_RETENTION_DAYS; Infinity: for
   * ever): a rebuild loads only the orders changed within it, the others it would load only to forget.
   */
  abstract readonly retentionMs: number;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
