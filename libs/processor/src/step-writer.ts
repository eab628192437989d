import { Injectable, Optional } from '@nestjs/common';
import { mayBeStored, type Delivery } from '@cdp/bus';
import { PurchaseNotices } from '@cdp/recommendations';
import { SegmentEventCounts } from '@cdp/segments';
import { AnalyticStore, withoutPersonalData, type StoreBatch } from '@cdp/store';
import { CommitLogPruner } from './commit-log-pruner.js';
import { IdentityStep } from './identity.step.js';
import { purchasesOf } from './stored-purchases.js';

export interface WriteOptions {
  /** Customers whose older profile snapshots are redacted, after the rows and before the commit. */
  redact?: readonly string[];
  /** Purchase events no longer kept for their order (OrderRows.displacedPurchases): deleted, before the commit. */
  displacedPurchases?: readonly string[];
  /**
   * Asked once the rows are in: purchases of this batch displaced meanwhile by another processor
   * (OrdersStep.displacedAmong); deleted with the others, before the commit.
   */
  displacedSinceApplied?: () => Promise<readonly string[]>;
}

/**
 * The runner's store write for one account: the rows the steps returned, bracketed so that a crash
 * between two inserts leaves the messages unfinished and out of rebuilds, and their redelivery
 * completes every table (AnalyticStore.begin). A redelivered message's rows are not stored twice.
 * Redacted customers' rows are stored redacted, and an opt-out redacts what was stored before it.
 */
@Injectable()
export class StepWriter {
  constructor(
    private readonly store: AnalyticStore,
    private readonly identityStep: IdentityStep,
    @Optional() private readonly notices?: PurchaseNotices,
    @Optional() private readonly pruner?: CommitLogPruner,
    @Optional() private readonly segmentCounts?: SegmentEventCounts,
  ) {}

  async write(
    account: string,
    deliveries: readonly Delivery[],
    rows: StoreBatch,
    options: WriteOptions = {},
  ): Promise<void> {
    const messages = deliveries.map((d) => d.message.id);
    // Rows about a redacted customer go in without the person's data: the customers this batch
    // redacts (an opt-out's, and those a record sent with a pooled identifier reaches), and the owners
    // of orders it changes, which an order update naming no customer takes from the order state.
    const inBatch = new Set(rows.customers.map((c) => c.svc_id));
    const owners = (rows.orders ?? []).flatMap((o) => (o.svc_id && !inBatch.has(o.svc_id) ? [o.svc_id] : []));
    const redacted = owners.length ? await this.identityStep.redactedAmong(account, owners) : [];
    try {
      await this.store.begin(account, messages);
      await this.store.write(account, withoutPersonalData(rows, redacted), deliveries.some(mayBeStored));
      // Older snapshots last: a redelivery after a crash here redacts them then.
      if (options.redact) await this.store.redactCustomers(account, options.redact);
      // After the rows that replace them: a crash in between leaves the message unfinished, and its
      // redelivery (whose kept purchase names them again) deletes them then.
      const displaced = [
        ...(options.displacedPurchases ?? []),
        ...((await options.displacedSinceApplied?.()) ?? []),
      ];
      if (displaced.length) {
        await this.store.deleteEvents(account, displaced);
        this.segmentCounts?.uncertain(account); // its digests may count them
      }
      await this.store.commit(account, messages);
    } catch (err) {
      // Part of the events may be stored: audience lookups stop counting from what they kept.
      this.segmentCounts?.uncertain(account);
      throw err;
    }
    // Once stored: audience lookups count these events from now on (kept per customer, in memory).
    if (rows.events.length) this.segmentCounts?.stored(account, rows.events);
    this.pruner?.afterCommit(account);
    // Once stored: recommendations leave these products out from now on, not from the next refresh.
    const purchases = this.notices && purchasesOf(rows);
    if (purchases?.length) this.notices!.notify({ account, purchases });
    // Last: the index forgets the messages' remembered effects, and waits until a replica holds this
    // batch's writes of hot state (identities, profiles, consent, orders, an opt-out's redaction).
    await this.identityStep.settle(
      account,
      deliveries.map((d) => d.message),
    );
  }
}
