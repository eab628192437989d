import { Injectable } from '@nestjs/common';
import { acceptanceOrder, ok, type Delivery, type Step, type StepResult } from '@cdp/bus';
import { ConsentState } from '@cdp/consent';
import type { SubscriptionsMessage } from '@cdp/contracts';
import {
  DEFAULT_CHANNEL,
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
import type { StoreBatch } from '@cdp/store';
import { IdentityStep, withMerges } from './identity.step.js';
import { emptyBatch } from './store-rows.js';

export interface SubscriptionsInput {
  account: string;
  deliveries: readonly (Delivery & { message: SubscriptionsMessage })[];
}

interface Item {
  message: SubscriptionsMessage;
  index: number;
  record: SubscriptionRecord;
  /** The record's place in acceptance order: memberships and `opted_in` are last-writer-wins by it. */
  at: number;
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
 * customer, changes the hot list memberships and profiles, and returns the rows to store three ways — a consent-history row (who,
 * what, when, through which key), a `list`/`subscribe` event (spec "Events": every update of a list
 * subscription generates one) and, for `svc_all` or a channel opt-in, the profile's `opted_in`.
 */
@Injectable()
export class SubscriptionsStep implements Step<SubscriptionsInput, StoreBatch> {
  constructor(
    private readonly identityStep: IdentityStep,
    private readonly consent: ConsentState,
  ) {}

  async run({ account, deliveries }: SubscriptionsInput): Promise<StepResult<StoreBatch>> {
    const items: Item[] = deliveries.flatMap((d) =>
      d.message.records.map((record, index) => ({
        message: d.message,
        index,
        record,
        at: acceptanceOrder(d, index),
      })),
    );
    const resolution = await this.identityStep.run({ account, items });
    if (resolution.type !== 'ok') return resolution;
    const resolved = resolution.value;
    const { resolutions, identifiers } = resolved;
    const now = toStoreTime(Date.now());
    const batch: StoreBatch = { ...emptyBatch(), consentHistory: [] };
    const updates: ProfileUpdate[] = [];
    const lastMessageOf = new Map<string, string>();

    faultPoint(FAULT_POINTS.consentApply);
    const applied = await this.consent.apply(
      account,
      items.map((item, i) => ({
        customerId: resolutions[i]!.customerId,
        listId: item.record.list_id,
        subscribed: item.record.subscribed,
        at: item.at,
      })),
    );

    items.forEach((item, i) => {
      const { customerId, created, linked, merged } = resolutions[i]!;
      const { message, record, index } = item;
      this.identityStep.addEffectRows(item, resolutions[i]!, now, batch);
      for (const loser of merged) lastMessageOf.set(loser, message.id);
      const update: AttributeUpdate = {};
      for (const id of linked) if (isProfileIdentifier(id.kind)) update[id.kind] = id.value;
      // svc_all is the legacy spelling of global opt-in (spec "List and subscription resources").
      if (record.list_id === SVC_ALL) update.opted_in = record.subscribed;
      if (created || merged.length || Object.keys(update).length > 0) {
        updates.push(withMerges(customerId, update, merged, item.at));
        lastMessageOf.set(customerId, message.id);
      }
      const used: Identifier = identifiers[i]![0]!;
      const receivedAt = toStoreTime(message.receivedAt);
      batch.consentHistory!.push({
        svc_id: customerId,
        list_id: record.list_id,
        subscribed: record.subscribed,
        version: applied[i]!.version,
        at: item.at,
        identifier_kind: used.kind,
        identifier_value: used.value,
        api_key: message.key,
        source: 'subscriptions',
        msg_id: message.id,
        changed_at: receivedAt,
        stored_at: now,
      });
      // Further fields sent with the update (the browser SDK's page fields) describe its event.
      const { channel, ...further } = record.event_data ?? {};
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
        channel: typeof channel === 'string' ? channel : DEFAULT_CHANNEL,
        identifiers: eventIdentifiers,
        data: { ...further, list_id: record.list_id, subscribed: record.subscribed },
        order: null,
      });
    });

    this.identityStep.redactOptedOut(items, resolved, updates, lastMessageOf);
    batch.customers.push(
      ...(await this.identityStep.applyProfiles(account, updates, (c) => lastMessageOf.get(c)!, now)),
    );
    return ok(batch);
  }
}
