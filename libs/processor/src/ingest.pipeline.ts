import { Injectable } from '@nestjs/common';
import type { Delivery, Settlement } from '@cdp/bus';
import type { IngestMessage } from '@cdp/contracts';
import {
  eventId,
  identifierList,
  isProfileIdentifier,
  customerIdSeed,
  toStoreTime,
  type AttributeUpdate,
  type EventRecord,
  type ProfileRecord,
} from '@cdp/domain';
import { IdentityIndex, IdentityNotWarmError, ProfileState, type Resolution } from '@cdp/identity';
import type { Identifier } from '@cdp/domain';
import { AnalyticStore, type EventRow, type StoreBatch } from '@cdp/store';
import { IdentityRebuild } from './identity-rebuild.service.js';
import { OrdersStep } from './orders.step.js';
import { ProductsStep } from './products.step.js';

interface Item {
  message: IngestMessage;
  index: number;
  record: EventRecord | ProfileRecord;
}

/**
 * The processor's work for a batch of bus messages: resolve every record to a customer (one call to
 * the identity index per account), apply profile updates to the hot state, and append links,
 * profile snapshots and events to the store — one insert per table per account.
 */
@Injectable()
export class IngestPipeline {
  constructor(
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly store: AnalyticStore,
    private readonly rebuild: IdentityRebuild,
    private readonly ordersStep: OrdersStep,
    private readonly productsStep: ProductsStep,
  ) {}

  async process(batch: readonly Delivery[]): Promise<Settlement[]> {
    const byAccount = new Map<string, Delivery[]>();
    for (const delivery of batch) {
      const list = byAccount.get(delivery.message.account) ?? [];
      list.push(delivery);
      byAccount.set(delivery.message.account, list);
    }
    for (const [account, deliveries] of byAccount) await this.processAccount(account, deliveries);
    return batch.map((delivery) => ({ delivery, outcome: 'ack' }));
  }

  /** Resolves a batch; an index that does not hold the account is rebuilt from the store first. */
  private async resolve(account: string, records: Identifier[][], seeds: string[]): Promise<Resolution[]> {
    try {
      return await this.identity.resolve(account, records, seeds);
    } catch (err) {
      if (!(err instanceof IdentityNotWarmError)) throw err;
      if (!(await this.rebuild.rebuild(account))) throw err; // another processor is rebuilding: retry later
      return this.identity.resolve(account, records, seeds);
    }
  }

  private async processAccount(account: string, deliveries: Delivery[]): Promise<void> {
    // Products and order updates name no customer: the commerce steps take them (below).
    const items: Item[] = deliveries.flatMap(({ message: m }) =>
      m.kind === 'events' || m.kind === 'profiles'
        ? m.records.map((record, index) => ({ message: m, index, record }))
        : [],
    );
    const resolutions = items.length
      ? await this.resolve(
          account,
          items.map((item) => identifierList(item.record.identifiers)),
          items.map((item) => customerIdSeed(item.message.id, item.index)),
        )
      : [];
    const now = toStoreTime(Date.now());
    const batch: StoreBatch = { identityLinks: [], customers: [], events: [] };
    const updates: { customerId: string; update: AttributeUpdate }[] = [];
    const lastMessageOf = new Map<string, string>();
    const orders = this.ordersStep.begin(account);

    items.forEach((item, i) => {
      const { customerId, created, linked } = resolutions[i]!;
      const msgId = item.message.id;
      for (const id of linked) {
        batch.identityLinks.push({
          kind: id.kind,
          value: id.value,
          svc_id: customerId,
          msg_id: msgId,
          created_at: now,
        });
      }
      const update = profileUpdate(item, linked);
      if (created || Object.keys(update).length > 0) {
        updates.push({ customerId, update });
        lastMessageOf.set(customerId, msgId);
      }
      if (item.message.kind === 'events') {
        const record = item.record as EventRecord;
        const row = eventRow(record, msgId, item.index, customerId, item.message.receivedAt);
        if (!orders.take(row, record)) batch.events.push(row);
      }
    });

    for (const snapshot of await this.profiles.apply(account, updates)) {
      batch.customers.push({
        svc_id: snapshot.customerId,
        version: snapshot.version,
        msg_id: lastMessageOf.get(snapshot.customerId)!,
        updated_at: now,
        attributes: snapshot.attributes,
      });
    }
    await orders.finish(deliveries, batch, now);
    await this.productsStep.apply(account, deliveries, batch, now);
    const redelivery = deliveries.some((d) => d.deliveryCount > 1);
    await this.store.write(account, batch, redelivery);
  }
}

/**
 * What a record changes on its customer's profile. A profile record: its attributes. An event: the
 * profile identifiers (email, customer_id) it linked to the customer just now; an event repeating
 * known identifiers changes nothing, so it costs no profile write.
 */
function profileUpdate(item: Item, linked: readonly Identifier[]): AttributeUpdate {
  if (item.message.kind === 'profiles') return (item.record as ProfileRecord).attributes;
  const update: AttributeUpdate = {};
  for (const id of linked) if (isProfileIdentifier(id.kind)) update[id.kind] = id.value;
  return update;
}

function eventRow(
  e: EventRecord,
  msgId: string,
  index: number,
  customerId: string,
  receivedAt: number,
): EventRow {
  const identifiers: Record<string, string> = {};
  for (const [kind, value] of Object.entries(e.identifiers)) {
    identifiers[kind] = Array.isArray(value) ? value.join(',') : value;
  }
  return {
    event_id: eventId(msgId, index),
    msg_id: msgId,
    svc_id: customerId,
    ts: toStoreTime(e.ts),
    received_at: toStoreTime(receivedAt),
    type: e.type,
    action: e.action,
    channel: e.channel,
    identifiers,
    data: e.data,
    order: e.order ? JSON.stringify(e.order) : null,
  };
}
