import type { NatsConnection } from '@nats-io/transport-node';
import { PurchaseNotices, type PurchaseNotice } from '../purchase-notices.port.js';

export function purchasesSubject(prefix: string): string {
  return `${prefix}.recommendations.purchases`;
}

/**
 * Notices over core NATS: every process that recommends (the chDB owner, or each API replica with a
 * ClickHouse server) subscribes, no queue group; at most once, which the port allows for.
 */
export class NatsPurchaseNotices extends PurchaseNotices {
  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
    private readonly onError: (err: unknown) => void,
  ) {
    super();
  }

  notify(notice: PurchaseNotice): void {
    try {
      this.nc.publish(purchasesSubject(this.prefix), JSON.stringify(notice));
    } catch (err) {
      this.onError(err); // closed or draining: the next refresh takes the purchases in
    }
  }

  listen(listener: (notice: PurchaseNotice) => void): () => void {
    const subscription = this.nc.subscribe(purchasesSubject(this.prefix), {
      callback: (err, msg) => {
        if (err) return this.onError(err);
        try {
          listener(msg.json<PurchaseNotice>());
        } catch (e) {
          this.onError(e);
        }
      },
    });
    return () => subscription.unsubscribe();
  }
}
