import { Injectable } from '@nestjs/common';
import { mayBeStored, type Delivery } from '@cdp/bus';
import { ConsentState } from '@cdp/consent';
import type { SubscriptionsMessage } from '@cdp/contracts';
import {
  eventId,
  isProfileIdentifier,
  SVC_ALL,
  toStoreTime,
  type AttributeUpdate,
  type Identifier,
  type SubscriptionRecord,
} from '@cdp/domain';
import type { ProfileUpdate } from '@cdp/identity';
import { FAULT_POINTS, faultPoint } from '@cdp/faults';
import { AnalyticStore, type StoreBatch } from '@cdp/store';
import { IdentityStep, withMerges } from './identity.step.js';

interface Item {
  message: SubscriptionsMessage;
  index: number;
  record: SubscriptionRecord;
}

export function isSubscriptionsDelivery(d: Delivery): d is Delivery & { message: SubscriptionsMessage } {
  return d.message.kind === 'subscriptions';
}

/** Consent changes, compliance opt-outs and identifier updates have steps of their own; everything else is ingest. */
const OWN_LANES = new Set(['subscriptions', 'optout', 'identifier-updates']);
function lane(d: Delivery): string {
  return OWN_LANES.has(d.message.kind) ? d.message.kind : 'ingest';
}

/** Consecutive deliveries split where they change between consent changes, opt-outs and other records. */
export function runsOfKind(batch: readonly Delivery[]): Delivery[][] {
  const runs: Delivery[][] = [];
  for (const d of batch) {
    const last = runs[runs.length - 1];
    if (last && lane(last[0]!) === lane(d)) last.push(d);
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
    private readonly identityStep: IdentityStep,
    private readonly consent: ConsentState,
    private readonly store: AnalyticStore,
  ) {}

  async process(account: string, deliveries: readonly (Delivery & { message: SubscriptionsMessage })[]) {
    const items: Item[] = deliveries.flatMap((d) =>
      d.message.records.map((record, index) => ({ message: d.message, index, record })),
    );
    const resolved = await this.identityStep.resolve(account, items);
    const { resolutions, identifiers } = resolved;
    const now = toStoreTime(Date.now());
    const batch: StoreBatch = {
      identityLinks: [],
      merges: [],
      conflicts: [],
      customers: [],
      events: [],
      consentHistory: [],
    };
    const updates: ProfileUpdate[] = [];
    const lastMessageOf = new Map<string, string>();

    faultPoint(FAULT_POINTS.consentApply);
    const applied = await this.consent.apply(
      account,
      items.map((item, i) => ({
        customerId: resolutions[i]!.customerId,
        listId: item.record.list_id,
        subscribed: item.record.subscribed,
      })),
    );

    items.forEach((item, i) => {
      const { customerId, created, linked, merged } = resolutions[i]!;
      const { message, record, index } = item;
      this.identityStep.recordEffects(batch, item, resolutions[i]!, now);
      for (const loser of merged) lastMessageOf.set(loser, message.id);
      const update: AttributeUpdate = {};
      for (const id of linked) if (isProfileIdentifier(id.kind)) update[id.kind] = id.value;
      // svc_all is the legacy spelling of global opt-in (spec "List and subscription resources").
      if (record.list_id === SVC_ALL) update.opted_in = record.subscribed;
      if (created || merged.length || Object.keys(update).length > 0) {
        updates.push(withMerges(customerId, update, merged));
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

    this.identityStep.redactOptedOut(items, resolved, updates, lastMessageOf);
    batch.customers.push(
      ...(await this.identityStep.applyProfiles(account, updates, (c) => lastMessageOf.get(c)!, now)),
    );
    const messages = deliveries.map((d) => d.message.id);
    await this.store.begin(account, messages);
    await this.store.write(account, batch, deliveries.some(mayBeStored));
    await this.store.commit(account, messages);
    await this.identityStep.settle(
      account,
      deliveries.map((d) => d.message),
    );
  }
}
