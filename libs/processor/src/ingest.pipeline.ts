import { Injectable } from '@nestjs/common';
import type { Delivery, Settlement } from '@cdp/bus';
import type { EventsMessage, IngestMessage, ProfilesMessage } from '@cdp/contracts';
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
import {
  bornKey,
  IdentityIndex,
  IdentityNotWarmError,
  ProfileState,
  type ProfileUpdate,
  type ResolveInput,
  type Resolution,
} from '@cdp/identity';
import type { Identifier } from '@cdp/domain';
import { AnalyticStore, type EventRow, type StoreBatch } from '@cdp/store';
import { IdentityRebuild } from './identity-rebuild.service.js';
import { CustomColumns } from './custom-columns.service.js';
import { ObjectsWriter } from './objects.writer.js';

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
    private readonly columns: CustomColumns,
    private readonly objects: ObjectsWriter,
  ) {}

  async process(batch: readonly Delivery[]): Promise<Settlement[]> {
    // Records of account objects identify no customer: they go straight to their tables.
    const objects = batch.filter((d) => d.message.kind === 'objects');
    if (objects.length) await this.objects.write(objects);
    const byAccount = new Map<string, Delivery[]>();
    for (const delivery of batch) {
      if (delivery.message.kind === 'objects') continue;
      const list = byAccount.get(delivery.message.account) ?? [];
      list.push(delivery);
      byAccount.set(delivery.message.account, list);
    }
    for (const [account, deliveries] of byAccount) await this.processAccount(account, deliveries);
    return batch.map((delivery) => ({ delivery, outcome: 'ack' }));
  }

  /** Resolves a batch; an index that does not hold the account is rebuilt from the store first. */
  private async resolve(account: string, records: ResolveInput[]): Promise<Resolution[]> {
    try {
      return await this.identity.resolve(account, records);
    } catch (err) {
      if (!(err instanceof IdentityNotWarmError)) throw err;
      if (!(await this.rebuild.rebuild(account))) throw err; // another processor is rebuilding: retry later
      return this.identity.resolve(account, records);
    }
  }

  private async processAccount(account: string, deliveries: Delivery[]): Promise<void> {
    const items: Item[] = deliveries.flatMap((d) =>
      (d.message as EventsMessage | ProfilesMessage).records.map((record, index) => ({
        message: d.message,
        index,
        record,
      })),
    );
    const resolutions = await this.resolve(
      account,
      items.map(({ message, index, record }) => ({
        ids: identifierList(record.identifiers),
        seed: customerIdSeed(message.id, index),
        born: bornKey(message.receivedAt, message.id, index),
        message: message.id,
        index,
      })),
    );
    const now = toStoreTime(Date.now());
    const batch: StoreBatch = { identityLinks: [], merges: [], conflicts: [], customers: [], events: [] };
    const updates: ProfileUpdate[] = [];
    const lastMessageOf = new Map<string, string>();

    items.forEach((item, i) => {
      const { customerId, born, created, linked, merged, mergeSeq, conflicts } = resolutions[i]!;
      const msgId = item.message.id;
      for (const id of linked) {
        batch.identityLinks.push({
          kind: id.kind,
          value: id.value,
          svc_id: customerId,
          born,
          msg_id: msgId,
          created_at: now,
        });
      }
      if (merged.length || conflicts.length) {
        const cause = identifierList(item.record.identifiers).map((id) => `${id.kind}:${id.value}`);
        for (const loser of merged) {
          batch.merges.push({
            loser,
            survivor: customerId,
            seq: mergeSeq,
            cause,
            msg_id: msgId,
            created_at: now,
          });
          lastMessageOf.set(loser, msgId);
        }
        for (const c of conflicts) {
          batch.conflicts.push({
            svc_id: customerId,
            other_svc_id: c.customerId,
            reason: c.reason,
            cause,
            msg_id: msgId,
            created_at: now,
          });
        }
      }
      const update = profileUpdate(item, linked, conflicts.length > 0);
      if (created || merged.length || Object.keys(update).length > 0) {
        updates.push(merged.length ? { customerId, update, absorb: merged } : { customerId, update });
        lastMessageOf.set(customerId, msgId);
      }
      if (item.message.kind === 'events') {
        batch.events.push(
          eventRow(item.record as EventRecord, msgId, item.index, customerId, item.message.receivedAt),
        );
      }
    });

    for (const snapshot of await this.profiles.apply(account, updates)) {
      batch.customers.push({
        svc_id: snapshot.customerId,
        version: snapshot.version,
        msg_id: lastMessageOf.get(snapshot.customerId)!,
        updated_at: now,
        merged_into: snapshot.mergedInto ?? null,
        attributes: snapshot.attributes,
      });
    }
    const redelivery = deliveries.some((d) => d.deliveryCount > 1);
    await this.columns.prepare(account, batch);
    await this.store.write(account, batch, redelivery);
    await this.identity.settle(account, [...new Set(deliveries.map((d) => d.message.id))]);
  }
}

/**
 * What a record changes on its customer's profile. A profile record: its attributes. An event: the
 * profile identifiers (email, customer_id) it linked to the customer just now; an event repeating
 * known identifiers changes nothing, so it costs no profile write.
 *
 * A record in conflict (its identifiers also name another customer it could not merge with) does not
 * copy onto its customer the email or customer_id that still belong to that other customer.
 */
function profileUpdate(item: Item, linked: readonly Identifier[], conflicted: boolean): AttributeUpdate {
  if (item.message.kind === 'profiles') {
    const { attributes } = item.record as ProfileRecord;
    if (!conflicted) return attributes;
    const update = { ...attributes };
    for (const kind of ['email', 'customer_id'])
      if (typeof update[kind] === 'string' && !linked.some((id) => id.kind === kind)) delete update[kind];
    return update;
  }
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
