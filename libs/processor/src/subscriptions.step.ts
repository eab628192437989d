import { Injectable } from '@nestjs/common';
import type { Delivery } from '@cdp/bus';
import { ConsentState } from '@cdp/consent';
import type { SubscriptionsMessage } from '@cdp/contracts';
import {
  customerIdSeed,
  eventId,
  identifierList,
  isProfileIdentifier,
  SVC_ALL,
  toStoreTime,
  type AttributeUpdate,
  type Identifier,
  type SubscriptionRecord,
} from '@cdp/domain';
import { IdentityIndex, IdentityNotWarmError, ProfileState, type Resolution } from '@cdp/identity';
import { AnalyticStore, type StoreBatch } from '@cdp/store';
import { IdentityRebuild } from './identity-rebuild.service.js';

interface Item {
  message: SubscriptionsMessage;
  index: number;
  record: SubscriptionRecord;
}

export function isSubscriptionsDelivery(d: Delivery): d is Delivery & { message: SubscriptionsMessage } {
  return d.message.kind === 'subscriptions';
}

/** Consecutive deliveries split where they change between consent changes and other records. */
export function runsOfKind(batch: readonly Delivery[]): Delivery[][] {
  const runs: Delivery[][] = [];
  for (const d of batch) {
    const last = runs[runs.length - 1];
    if (last && isSubscriptionsDelivery(last[0]!) === isSubscriptionsDelivery(d)) last.push(d);
    else runs.push([d]);
  }
  return runs;
}

export function groupByAccount<T extends Delivery>(deliveries: readonly T[]): Map<string, T[]> {
  const byAccount = new Map<string, T[]>();
  for (const d of deliveries) {
    const list = byAccount.get(d.message.account) ?? [];
    list.push(d);
    byAccount.set(d.message.account, list);
  }
  return byAccount;
}

/**
 * Consent changes of one account (spec "Consent and subscription"): each record resolves to its
 * customer, changes the hot list memberships, and is stored three ways — a consent-history row (who,
 * what, when, through which key), a `list`/`subscribe` event (spec "Events": every update of a list
 * subscription generates one) and, for `svc_all` or a channel opt-in, the profile's `opted_in`.
 */
@Injectable()
export class SubscriptionsStep {
  constructor(
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly consent: ConsentState,
    private readonly store: AnalyticStore,
    private readonly rebuild: IdentityRebuild,
  ) {}

  async process(account: string, deliveries: readonly (Delivery & { message: SubscriptionsMessage })[]) {
    const items: Item[] = deliveries.flatMap((d) =>
      d.message.records.map((record, index) => ({ message: d.message, index, record })),
    );
    const identifiers = items.map((item) => identifierList(item.record.identifiers));
    const resolutions = await this.resolve(
      account,
      identifiers,
      items.map((item) => customerIdSeed(item.message.id, item.index)),
    );
    const now = toStoreTime(Date.now());
    const batch: StoreBatch = { identityLinks: [], customers: [], events: [], consentHistory: [] };
    const updates: { customerId: string; update: AttributeUpdate }[] = [];
    const lastMessageOf = new Map<string, string>();

    const applied = await this.consent.apply(
      account,
      items.map((item, i) => ({
        customerId: resolutions[i]!.customerId,
        listId: item.record.list_id,
        subscribed: item.record.subscribed,
      })),
    );

    items.forEach((item, i) => {
      const { customerId, created, linked } = resolutions[i]!;
      const { message, record, index } = item;
      for (const id of linked) {
        batch.identityLinks.push({
          kind: id.kind,
          value: id.value,
          svc_id: customerId,
          msg_id: message.id,
          created_at: now,
        });
      }
      const update: AttributeUpdate = {};
      for (const id of linked) if (isProfileIdentifier(id.kind)) update[id.kind] = id.value;
      // svc_all is the legacy spelling of global opt-in (spec "List and subscription resources").
      if (record.list_id === SVC_ALL) update.opted_in = record.subscribed;
      if (created || Object.keys(update).length > 0) {
        updates.push({ customerId, update });
        lastMessageOf.set(customerId, message.id);
      }
      const used: Identifier = identifiers[i]![0]!;
      const receivedAt = toStoreTime(message.receivedAt);
      batch.consentHistory!.push({
        svc_id: customerId,
        list_id: record.list_id,
        subscribed: record.subscribed,
        version: applied[i]!.version,
        identifier_kind: used.kind,
        identifier_value: used.value,
        api_key: message.key,
        source: 'subscriptions',
        msg_id: message.id,
        changed_at: receivedAt,
        stored_at: now,
      });
      const eventIdentifiers: Record<string, string> = {};
      for (const [kind, value] of Object.entries(record.identifiers)) {
        eventIdentifiers[kind] = Array.isArray(value) ? value.join(',') : value;
      }
      batch.events.push({
        event_id: eventId(message.id, index),
        msg_id: message.id,
        svc_id: customerId,
        ts: receivedAt,
        received_at: receivedAt,
        type: 'list',
        action: 'subscribe',
        channel: 'offline',
        identifiers: eventIdentifiers,
        data: { list_id: record.list_id, subscribed: record.subscribed },
        order: null,
      });
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
    await this.store.write(
      account,
      batch,
      deliveries.some((d) => d.deliveryCount > 1),
    );
  }

  /**
   * The one place this step asks the identity index: resolve the batch, rebuilding an index that does
   * not hold the account from the store first.
   */
  private async resolve(account: string, records: Identifier[][], seeds: string[]): Promise<Resolution[]> {
    try {
      return await this.identity.resolve(account, records, seeds);
    } catch (err) {
      if (!(err instanceof IdentityNotWarmError)) throw err;
      if (!(await this.rebuild.rebuild(account))) throw err; // another processor is rebuilding: retry later
      return this.identity.resolve(account, records, seeds);
    }
  }
}
