import type { PipeTransform } from '@nestjs/common';
import { ApiError, MAX_BATCH, type Invalid } from '@cdp/contracts';
import { collectIdentifiers, SVC_ALL, type SubscriptionRecord } from '@cdp/domain';
import { memberInvalids } from '../validation/envelope-validation.pipe.js';
import {
  FURTHER_FIELDS,
  updateKindOf,
  type ChannelOptInDto,
  type ListSubscriptionDto,
  type SubscriptionUpdate,
} from './subscription-update.dto.js';

/** What the API answers for an update: the update as applied (spec/NOTES.md "Responses"). */
export type SubscriptionEcho =
  { list_id: string; email: string; subscribed: boolean } | { email: string; opted_in: boolean };

/** The updates as the processor takes them, and as the API echoes them. */
export interface ParsedSubscriptions {
  records: SubscriptionRecord[];
  echo: SubscriptionEcho[];
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `POST /v3/lists/subscriptions`: one update or an array mixing both kinds (spec "Lists and
 * subscriptions"), each checked by the DTO of its kind (subscription-update.dto.ts). Every problem of
 * every update is answered at once in the spec's envelope; in an array each carries its index as `event`.
 */
export class SubscriptionsPipe implements PipeTransform<unknown, Promise<ParsedSubscriptions>> {
  async transform(body: unknown): Promise<ParsedSubscriptions> {
    const batch = Array.isArray(body);
    const items: unknown[] = batch ? body : [body];
    if (batch && items.length === 0) {
      throw ApiError.invalid([{ field: 'body', reason: 'must hold at least one update' }]);
    }
    if (items.length > MAX_BATCH) {
      throw ApiError.invalid([{ field: 'body', reason: `at most ${MAX_BATCH} updates per request` }]);
    }
    const invalids: Invalid[] = [];
    for (const [index, item] of items.entries()) {
      const problems = isRecord(item)
        ? inWrittenOrder(await memberInvalids(item, updateKindOf(item)), item)
        : [{ field: 'body', reason: 'an update must be an object' }];
      for (const p of problems) invalids.push(batch ? { ...p, event: index } : p);
    }
    if (invalids.length) throw ApiError.invalid(invalids);
    return subscriptionsOf(items as SubscriptionUpdate[]);
  }
}

const FURTHER = new Set(FURTHER_FIELDS.map((f) => f.name));

/**
 * The problems of further fields in the order the client wrote those fields (the DTO checks them in
 * the event table's order), where they stand among the others: after the email, before the update's own.
 */
function inWrittenOrder(invalids: Invalid[], update: Record<string, unknown>): Invalid[] {
  const written = Object.keys(update);
  const isFurther = (i: Invalid) => typeof i.field === 'string' && FURTHER.has(i.field);
  const further = invalids
    .filter(isFurther)
    .sort((a, b) => written.indexOf(a.field as string) - written.indexOf(b.field as string));
  return invalids.map((i) => (isFurther(i) ? further.shift()! : i));
}

export const SubscriptionsValidation = new SubscriptionsPipe();

/** Valid updates as the processor's records and the API's echo. */
export function subscriptionsOf(updates: readonly SubscriptionUpdate[]): ParsedSubscriptions {
  const records: SubscriptionRecord[] = [];
  const echo: SubscriptionEcho[] = [];
  for (const update of updates) {
    const { email } = update;
    const identifiers = collectIdentifiers({ email });
    const eventData = furtherEventFields(update);
    if (update.opted_in !== undefined) {
      const { opted_in } = update as ChannelOptInDto;
      records.push({
        identifiers,
        list_id: SVC_ALL,
        subscribed: opted_in,
        channel_opt_in: true,
        ...eventData,
      });
      echo.push({ email, opted_in });
    } else {
      const { list_id, subscribed } = update as ListSubscriptionDto;
      records.push({ identifiers, list_id, subscribed, channel_opt_in: false, ...eventData });
      echo.push({ list_id, email, subscribed });
    }
  }
  return { records, echo };
}

/** The further fields that are event fields, for the update's `list`/`subscribe` event (already checked). */
function furtherEventFields(update: SubscriptionUpdate): {
  event_data?: Record<string, string | number | boolean>;
} {
  const data: Record<string, string | number | boolean> = {};
  for (const { name } of FURTHER_FIELDS) {
    const value = update[name];
    if (value !== undefined && value !== null) data[name] = value as string | number | boolean;
  }
  return Object.keys(data).length ? { event_data: data } : {};
}
