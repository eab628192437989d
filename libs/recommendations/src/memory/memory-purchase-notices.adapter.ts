import { PurchaseNotices, type PurchaseNotice } from '../purchase-notices.port.js';

/** Notices within one process (the embedded app: the processor and the recommender side by side). */
export class MemoryPurchaseNotices extends PurchaseNotices {
  private readonly listeners = new Set<(notice: PurchaseNotice) => void>();

  notify(notice: PurchaseNotice): void {
    for (const listener of this.listeners) listener(notice);
  }

  listen(listener: (notice: PurchaseNotice) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
