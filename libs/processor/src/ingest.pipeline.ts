import { Injectable } from '@nestjs/common';
import {
  acceptanceOrder,
  failureOf,
  mayBeStored,
  ok,
  type Delivery,
  type DeliveryResult,
  type StepResult,
} from '@cdp/bus';
import type { IngestMessage } from '@cdp/contracts';
import {
  eventId,
  isProfileIdentifier,
  toStoreTime,
  type AttributeUpdate,
  type EventRecord,
  type Identifier,
  type ProfileRecord,
} from '@cdp/domain';
import type { ProfileUpdate } from '@cdp/identity';
import { faultPoint } from '@cdp/faults';
import { AnalyticStore } from '@cdp/store';
import { IdentityStep, withMerges } from './identity.step.js';
import { CustomColumns } from './custom-columns.service.js';
import { objectGroups, ObjectsWriter } from './objects.writer.js';
import {
  groupByAccount,
  isSubscriptionsDelivery,
  runsOfKind,
  SubscriptionsStep,
} from './subscriptions.step.js';
import { orderEventOf, OrdersStep, type OrderEvent } from './orders.step.js';
import { ProductsStep } from './products.step.js';
import { isOptOutDelivery, OptOutStep } from './optout.step.js';
import { IdentifierUpdatesStep, isIdentifierUpdatesDelivery } from './identifier-updates.step.js';
import { StepWriter } from './step-writer.js';
import { eventRowOf, sharedEventColumns, type SharedEventColumns } from './event-row.js';
import { collectRows, emptyBatch, StepFailed, unwrap } from './store-rows.js';

interface Item {
  message: IngestMessage;
  index: number;
  record: EventRecord | ProfileRecord;
  /** The record's place in acceptance order: its profile fields are written last-writer-wins by it. */
  at: number;
}

/**
 * The runner of the processor's steps for a batch of bus messages: resolve every record to a customer
 * (one call to the identity index per account), apply profile updates to the hot state, collect the
 * rows each step returns and write them — one insert per table per account — and give back one result
 * per delivery (StepResult: BusTransport turns them into acks, retries and dead letters).
 *
 * A step's failure (a `retry` or `deadLetter` result, or an error, which `failureOf` classifies) stops
 * the batch; every delivery of it gets that result, and the transport tries a batch of several again
 * message by message. A `drop` settles only the deliveries its step was given.
 */
@Injectable()
export class IngestPipeline {
  constructor(
    private readonly identityStep: IdentityStep,
    private readonly store: AnalyticStore,
    private readonly columns: CustomColumns,
    private readonly objects: ObjectsWriter,
    private readonly subscriptions: SubscriptionsStep,
    private readonly ordersStep: OrdersStep,
    private readonly productsStep: ProductsStep,
    private readonly optout: OptOutStep,
    private readonly writer: StepWriter,
    private readonly identifierUpdates: IdentifierUpdatesStep,
  ) {}

  /** The last batch's preparation: the next one starts after it (identity resolves in arrival order). */
  private prepared: Promise<unknown> = Promise.resolve();
  /** The last batch's results, settled once its store write is done or failed (never rejected). */
  private written: Promise<unknown> = Promise.resolve();

  /**
   * Processes a batch. A batch of events and profiles only is done in two stages, so that a caller
   * with two batches in flight overlaps them: while one batch's profiles are applied and its rows
   * written to the store, the next is already resolved in the identity index. The stages are serial
   * each, in arrival order. A batch that carries anything else waits for every write before it and
   * runs whole.
   *
   * Overlapping is safe because a batch's identity effects are remembered until its store write
   * settles them (a failed write is redelivered and gets the same resolutions), and every store
   * table is idempotent per message. A batch whose predecessor's write failed writes all the same:
   * the failed messages are retried later (their results say so), and every write is guarded by
   * acceptance order (`acceptanceOrder`), so storing a later message first changes no final state.
   * Failures are results, never thrown: the transport settles them.
   */
  process(batch: readonly Delivery[]): Promise<DeliveryResult[]> {
    const simple = batch.every((d) => d.message.kind === 'events' || d.message.kind === 'profiles');
    const writesBefore = this.written;
    let done: Promise<DeliveryResult[]>;
    if (!simple) {
      done = Promise.all([this.prepared, writesBefore]).then(() => this.processWhole(batch));
      this.prepared = done.catch(() => undefined);
    } else {
      // The writes of the batches before this one: a rebuild this batch may need waits for them.
      const prepare = this.prepared.then(() => this.prepareIngest(batch, writesBefore));
      this.prepared = prepare.catch(() => undefined);
      done = Promise.all([prepare, writesBefore]).then(async ([writes]) => {
        for (const write of writes) await write();
        return batch.map((delivery): DeliveryResult => ({ delivery, result: ok() }));
      });
    }
    const results = done.catch((err: unknown) => {
      const result = err instanceof StepFailed ? err.result : failureOf(err);
      return batch.map((delivery): DeliveryResult => ({ delivery, result }));
    });
    this.written = results;
    return results;
  }

  private async processWhole(batch: readonly Delivery[]): Promise<DeliveryResult[]> {
    const results = new Map<Delivery, StepResult<unknown>>();
    // Records of account objects identify no customer: they go straight to their tables.
    for (const group of objectGroups(batch.filter((d) => d.message.kind === 'objects'))) {
      const result = await this.objects.run(group);
      if (result.type === 'drop') {
        for (const d of group.deliveries) results.set(d, result);
        continue;
      }
      const { table, rows } = unwrap(result);
      await this.store.writeObjects(group.account, table, rows, group.deliveries.some(mayBeStored));
    }
    // Consent changes go to their own step; runs of each kind keep the batch's order.
    for (const run of runsOfKind(batch.filter((d) => d.message.kind !== 'objects'))) {
      if (run.every(isSubscriptionsDelivery)) {
        for (const [account, deliveries] of groupByAccount(run)) {
          const rows = unwrap(await this.subscriptions.run({ account, deliveries }));
          await this.writer.write(account, deliveries, rows);
        }
      } else if (run.every(isIdentifierUpdatesDelivery)) {
        for (const [account, deliveries] of groupByAccount(run)) {
          const rows = unwrap(await this.identifierUpdates.run({ account, deliveries }));
          // event_data may carry custom event fields: their columns before the rows.
          await this.columns.prepare(account, rows);
          await this.writer.write(account, deliveries, rows);
        }
      } else if (run.every(isOptOutDelivery)) {
        // The hot state one message at a time, in order; the store once for the account's whole run:
        // one insert per table and one redaction mutation per table for every customer it reaches,
        // not one full-table mutation per message. A crash before the commit redelivers them all.
        for (const [account, deliveries] of groupByAccount(run)) {
          const rows = emptyBatch();
          const redact = new Set<string>();
          for (const delivery of deliveries) {
            const write = unwrap(await this.optout.run({ account, delivery }));
            collectRows(rows, write.rows);
            for (const c of write.redact) redact.add(c);
          }
          // Settled like every message: settling waits until a replica holds the redaction.
          await this.writer.write(account, deliveries, rows, { redact: [...redact] });
        }
      } else {
        for (const write of await this.prepareIngest(run)) await write();
      }
    }
    return batch.map((delivery) => ({ delivery, result: results.get(delivery) ?? ok() }));
  }

  /**
   * Resolves and applies a batch, account by account; returns the store writes still to do.
   * `writesBefore` settles once the earlier batches' writes are done (or failed).
   */
  private async prepareIngest(
    batch: readonly Delivery[],
    writesBefore: Promise<unknown> = Promise.resolve(),
  ): Promise<(() => Promise<void>)[]> {
    const byAccount = new Map<string, Delivery[]>();
    for (const delivery of batch) {
      if (delivery.message.kind === 'objects') continue;
      const list = byAccount.get(delivery.message.account) ?? [];
      list.push(delivery);
      byAccount.set(delivery.message.account, list);
    }
    const writes: (() => Promise<void>)[] = [];
    for (const [account, deliveries] of byAccount)
      writes.push(await this.prepareAccount(account, deliveries, writesBefore));
    return writes;
  }

  private async prepareAccount(
    account: string,
    deliveries: Delivery[],
    writesBefore: Promise<unknown>,
  ): Promise<() => Promise<void>> {
    // A test makes one account's messages fail here (`processor.message[<account>]:reject`: poison).
    faultPoint('processor.message', account);
    // Products and order updates name no customer: the commerce steps take them (below).
    const items: Item[] = deliveries.flatMap((d) => {
      const m = d.message;
      return m.kind === 'events' || m.kind === 'profiles'
        ? m.records.map((record, index) => ({ message: m, index, record, at: acceptanceOrder(d, index) }))
        : [];
    });
    const resolved = unwrap(await this.identityStep.run({ account, items, writesBefore }));
    const { resolutions } = resolved;
    const now = toStoreTime(Date.now());
    const batch = emptyBatch();
    const updates: ProfileUpdate[] = [];
    const lastMessageOf = new Map<string, string>();
    const orderEvents: OrderEvent[] = [];

    // Items come message by message: what their rows share is made once per message.
    let shared: { message: IngestMessage; columns: SharedEventColumns } | undefined;
    items.forEach((item, i) => {
      const { customerId, created, linked, merged, conflicts } = resolutions[i]!;
      const msgId = item.message.id;
      this.identityStep.addEffectRows(item, resolutions[i]!, now, batch);
      for (const loser of merged) lastMessageOf.set(loser, msgId);
      const update = profileUpdate(item, linked, conflicts.length > 0);
      if (created || merged.length || (update && !isEmpty(update))) {
        updates.push(withMerges(customerId, update ?? {}, merged, item.at));
        lastMessageOf.set(customerId, msgId);
      }
      if (item.message.kind === 'events') {
        const record = item.record as EventRecord;
        if (shared?.message !== item.message)
          shared = { message: item.message, columns: sharedEventColumns(item.message) };
        const row = eventRowOf(record, shared.columns, eventId(msgId, item.index), customerId);
        // An order event is stored or not by the orders step, depending on the order's state.
        const order = orderEventOf(row, record, item.at);
        if (order) orderEvents.push(order);
        else batch.events.push(row);
      }
    });

    this.identityStep.redactOptedOut(items, resolved, updates, lastMessageOf);
    const { displacedPurchases, keptPurchases, ...orderRows } = unwrap(
      await this.ordersStep.run({ account, deliveries, events: orderEvents, now }),
    );
    collectRows(batch, orderRows);
    collectRows(batch, unwrap(await this.productsStep.run({ account, deliveries, now })));
    return async () => {
      // Profiles are applied in the write stage, in batch order like the writes: the next batch's
      // resolution (which reads no profile) need not wait for them.
      batch.customers.push(
        ...(await this.identityStep.applyProfiles(account, updates, (c) => lastMessageOf.get(c)!, now)),
      );
      await this.columns.prepare(account, batch);
      await this.writer.write(account, deliveries, batch, {
        ...(displacedPurchases?.length ? { displacedPurchases } : {}),
        ...(keptPurchases?.length
          ? { displacedSinceApplied: () => this.ordersStep.displacedAmong(account, keptPurchases) }
          : {}),
      });
    };
  }
}

/**
 * What a record changes on its customer's profile. A profile record: its attributes. An event: the
 * profile identifiers (email, customer_id) it linked to the customer just now, or nothing (undefined,
 * no object for most events): an event repeating known identifiers costs no profile write.
 *
 * A record in conflict (its identifiers also name another customer it could not merge with) does not
 * copy onto its customer the email or customer_id that still belong to that other customer.
 */
function profileUpdate(
  item: Item,
  linked: readonly Identifier[],
  conflicted: boolean,
): AttributeUpdate | undefined {
  if (item.message.kind === 'profiles') {
    const { attributes } = item.record as ProfileRecord;
    if (!conflicted) return attributes;
    const update = { ...attributes };
    for (const kind of ['email', 'customer_id'])
      if (typeof update[kind] === 'string' && !linked.some((id) => id.kind === kind)) delete update[kind];
    return update;
  }
  let update: AttributeUpdate | undefined;
  for (const id of linked) if (isProfileIdentifier(id.kind)) (update ??= {})[id.kind] = id.value;
  return update;
}

/** Whether an update changes nothing (by key: Object.keys would make an array for every record). */
function isEmpty(update: AttributeUpdate): boolean {
  for (const _ in update) return false;
  return true;
}
