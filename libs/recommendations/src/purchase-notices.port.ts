/** Products customers bought, as the processor stored them (the purchased line items of its messages). */
export interface PurchaseNotice {
  account: string;
  purchases: { customer: string; product: string }[];
}

/**
 * The processor tells the recommenders what it just stored as bought, so that a purchase made a moment
 * ago is left out at once rather than at the next refresh: in process (embedded), or over NATS to every
 * process that recommends (scaled out). Fire and forget: a notice lost on the way (a reconnect) is
 * left out at the next refresh generation, about a second later, which takes it in from the store.
 */
export abstract class PurchaseNotices {
  /** Tells every listener; sent after the store committed the purchases. */
  abstract notify(notice: PurchaseNotice): void;
  /** Calls `listener` with every notice from now on; the result stops it. */
  abstract listen(listener: (notice: PurchaseNotice) => void): () => void;
}
