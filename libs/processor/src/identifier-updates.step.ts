import { Injectable } from '@nestjs/common';
import { acceptanceOrder, ok, type Delivery, type Step, type StepResult } from '@cdp/bus';
import { ConsentState, IdentifierState, changeBody, type IdentifierChange } from '@cdp/consent';
import type { IdentifierUpdatesMessage } from '@cdp/contracts';
import {
  eventId,
  isProfileIdentifier,
  PHONE,
  SVC_ALL,
  toStoreTime,
  type AttributeUpdate,
  type IdentifierUpdate,
} from '@cdp/domain';
import { ProfileState, type ProfileUpdate, type Resolution } from '@cdp/identity';
import type { StoreBatch } from '@cdp/store';
import { IdentityStep, withMerges } from './identity.step.js';
import { emptyBatch } from './store-rows.js';
import { eventRowOf, sharedEventColumns } from './event-row.js';

export interface IdentifierUpdatesInput {
  account: string;
  deliveries: readonly (Delivery & { message: IdentifierUpdatesMessage })[];
}

interface Item {
  message: IdentifierUpdatesMessage;
  index: number;
  record: IdentifierUpdate & { identifiers: Record<string, string> };
  /** The record's place in acceptance order: the identifier's state, `svc_all` and `opted_in` go by it. */
  at: number;
}

/** Where a consent history row came from: email consent is the channel opt-in (rebuilt into `svc_all`). */
export const EMAIL_CONSENT_SOURCE = 'consent';
/** Consent of another messaging identifier: kept per identifier, never a list membership. */
export const IDENTIFIER_CONSENT_SOURCE = 'identifier_consent';

export function isIdentifierUpdatesDelivery(
  d: Delivery,
): d is Delivery & { message: IdentifierUpdatesMessage } {
  return d.message.kind === 'identifier-updates';
}

/**
 * Per-identifier state changes of one account (`POST /v3/consent`, `/v3/reachability`,
 * `/v3/identifiers`). Each record resolves its identifier to a customer as any record would (an
 * unknown one makes a customer; a phone, which resolution does not know, goes to the customers whose
 * profile has it, if any), changes the identifier's hot state, and is stored as an
 * `identifier_updates` row. Consent and reachability changes are also events (`consent` opt-in /
 * opt-out, `reachability` reachable / unreachable) and consent changes consent-history rows. The step
 * returns the rows; the runner writes them.
 *
 * Email consent is the channel opt-in (spec "Consent and subscription"): it changes the profile's
 * `opted_in` and the `svc_all` membership exactly as `{opted_in, email}` on `/v3/lists/subscriptions`
 * does, so the three read the same.
 */
@Injectable()
export class IdentifierUpdatesStep implements Step<IdentifierUpdatesInput, StoreBatch> {
  constructor(
    private readonly identityStep: IdentityStep,
    private readonly identifiers: IdentifierState,
    private readonly consent: ConsentState,
    private readonly profiles: ProfileState,
  ) {}

  async run({ account, deliveries }: IdentifierUpdatesInput): Promise<StepResult<StoreBatch>> {
    const items: Item[] = deliveries.flatMap((d) =>
      d.message.records.map((record, index) => ({
        message: d.message,
        index,
        record: { ...record, identifiers: { [record.field]: record.value } },
        at: acceptanceOrder(d, index),
      })),
    );
    // Phones are matched against profiles, every other identifier is resolved (in one index call).
    const resolvable = items.filter((item) => item.record.field !== PHONE);
    const resolution = await this.identityStep.run({ account, items: resolvable });
    if (resolution.type !== 'ok') return resolution;
    const resolved = resolution.value;
    const resolutionOf = new Map<Item, Resolution>(
      resolvable.map((item, i) => [item, resolved.resolutions[i]!]),
    );
    const customersOf = new Map<Item, string[]>();
    for (const item of items) {
      const resolution = resolutionOf.get(item);
      customersOf.set(
        item,
        resolution
          ? [resolution.customerId]
          : await this.profiles.customersWithPhone(account, item.record.value),
      );
    }
    const now = toStoreTime(Date.now());
    const batch: StoreBatch = { ...emptyBatch(), consentHistory: [], identifierUpdates: [] };
    const updates: ProfileUpdate[] = [];
    const lastMessageOf = new Map<string, string>();

    const versions = await this.identifiers.apply(
      account,
      items.map(({ record, at }) => changeOf(record, at)),
    );
    const emailConsent = items.filter(
      (item) => item.record.type === 'consent' && item.record.field === 'email',
    );
    const optIns = await this.consent.apply(
      account,
      emailConsent.map((item) => ({
        customerId: resolutionOf.get(item)!.customerId,
        listId: SVC_ALL,
        subscribed: (item.record as { consent: boolean }).consent,
        at: item.at,
      })),
    );
    const optInVersion = new Map(emailConsent.map((item, n) => [item, optIns[n]!.version]));

    items.forEach((item, i) => {
      const { message, record, index } = item;
      const resolution = resolutionOf.get(item);
      if (resolution) {
        const { customerId, created, linked, merged } = resolution;
        this.identityStep.addEffectRows(item, resolution, now, batch);
        for (const loser of merged) lastMessageOf.set(loser, message.id);
        const update: AttributeUpdate = {};
        for (const id of linked) if (isProfileIdentifier(id.kind)) update[id.kind] = id.value;
        if (record.type === 'consent' && record.field === 'email') update.opted_in = record.consent;
        if (created || merged.length || Object.keys(update).length > 0) {
          updates.push(withMerges(customerId, update, merged, item.at));
          lastMessageOf.set(customerId, message.id);
        }
      }
      const customers = customersOf.get(item)!;
      const changedAt = toStoreTime(record.ts);
      batch.identifierUpdates!.push({
        field: record.field,
        value: record.value,
        version: versions[i]!,
        type: record.type,
        change: changeBody(changeOf(record, item.at)),
        // A phone may be several customers' (or nobody's yet): the first is named.
        svc_id: customers[0] ?? '',
        api_key: message.key,
        msg_id: message.id,
        changed_at: changedAt,
        stored_at: now,
      });
      if (record.type === 'metadata') return;
      if (record.type === 'consent') {
        const email = record.field === 'email';
        // A phone nobody has yet still leaves its history row, under no customer.
        for (const customerId of customers.length ? customers : ['']) {
          batch.consentHistory!.push({
            svc_id: customerId,
            list_id: email ? SVC_ALL : record.field,
            subscribed: record.consent,
            version: email ? optInVersion.get(item)! : versions[i]!,
            at: item.at,
            identifier_kind: record.field,
            identifier_value: record.value,
            api_key: message.key,
            source: email ? EMAIL_CONSENT_SOURCE : IDENTIFIER_CONSENT_SOURCE,
            msg_id: message.id,
            changed_at: changedAt,
            stored_at: now,
          });
        }
      }
      const shared = sharedEventColumns(message);
      customers.forEach((customerId, n) => {
        const id = n === 0 ? eventId(message.id, index) : `${eventId(message.id, index)}.${n}`;
        batch.events.push(eventRowOf(record.event, shared, id, customerId));
      });
    });

    this.identityStep.redactOptedOut(resolvable, resolved, updates, lastMessageOf);
    batch.customers.push(
      ...(await this.identityStep.applyProfiles(account, updates, (c) => lastMessageOf.get(c)!, now)),
    );
    return ok(batch);
  }
}

/** The state change of a record (what IdentifierState applies and the store keeps). */
function changeOf(record: IdentifierUpdate, at: number): IdentifierChange {
  const base = { field: record.field, value: record.value, ts: record.ts, at };
  switch (record.type) {
    case 'consent':
      return { ...base, type: 'consent', consent: record.consent, reason: record.reason };
    case 'reachability':
      return {
        ...base,
        type: 'reachability',
        reachable: record.reachable,
        update_type: record.update_type,
        reason: record.reason,
      };
    case 'metadata':
      return { ...base, type: 'metadata', metadata: record.metadata };
  }
}
