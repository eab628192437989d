import { ApiError, MAX_BATCH, MAX_STRING, type Invalid } from '@cdp/contracts';
import {
  collectIdentifiers,
  EVENT_DATA_FIELDS,
  isJunkIdentifierValue,
  SVC_ALL,
  type SubscriptionRecord,
} from '@cdp/domain';

/** What the API answers for an update: the update as applied (spec/NOTES.md "Responses"). */
export type SubscriptionEcho =
  { list_id: string; email: string; subscribed: boolean } | { email: string; opted_in: boolean };

/** The updates as the processor takes them, and as the API echoes them. */
export interface ParsedSubscriptions {
  records: SubscriptionRecord[];
  echo: SubscriptionEcho[];
}

/** An address with something on either side of one `@` (the browser SDK asks for "email-like"). */
const EMAIL_LIKE = /^[^\s@]+@[^\s@]+$/;

/**
 * Reads `POST /v3/lists/subscriptions`: a channel opt-in `{opted_in, email}`, a subscription update
 * `{list_id, email, subscribed}`, or an array mixing both (spec "Lists and subscriptions"). Every
 * problem of every update is reported at once; in an array each carries its index as `event`.
 */
export function parseSubscriptions(body: unknown): ParsedSubscriptions {
  const batch = Array.isArray(body);
  const items: unknown[] = batch ? body : [body];
  if (batch && items.length === 0) {
    throw ApiError.invalid([{ field: 'body', reason: 'must hold at least one update' }]);
  }
  if (items.length > MAX_BATCH) {
    throw ApiError.invalid([{ field: 'body', reason: `at most ${MAX_BATCH} updates per request` }]);
  }
  const invalids: Invalid[] = [];
  const records: SubscriptionRecord[] = [];
  const echo: SubscriptionEcho[] = [];
  items.forEach((item, index) => {
    const problems: Omit<Invalid, 'event'>[] = [];
    const parsed = parseOne(item, problems);
    for (const p of problems) invalids.push(batch ? { ...p, event: index } : p);
    if (parsed) {
      records.push(parsed.record);
      echo.push(parsed.echo);
    }
  });
  if (invalids.length) throw ApiError.invalid(invalids);
  return { records, echo };
}

function parseOne(
  item: unknown,
  problems: Omit<Invalid, 'event'>[],
): { record: SubscriptionRecord; echo: SubscriptionEcho } | undefined {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    problems.push({ field: 'body', reason: 'an update must be an object' });
    return undefined;
  }
  const u = item as Record<string, unknown>;
  const email = u.email;
  if (email === undefined || email === null) problems.push({ field: 'email', reason: 'is required' });
  else if (typeof email !== 'string') problems.push({ field: 'email', reason: 'must be a string' });
  else if (email.length > MAX_STRING)
    problems.push({ field: 'email', reason: `must be at most ${MAX_STRING} characters` });
  else if (isJunkIdentifierValue(email) || !EMAIL_LIKE.test(email.trim())) {
    problems.push({ field: 'email', reason: 'must be an email address' });
  }

  const eventData = furtherEventFields(u, problems);
  const isList = u.list_id !== undefined;
  const isChannel = u.opted_in !== undefined;
  if (isList && isChannel) {
    problems.push({
      field: ['list_id', 'opted_in'],
      reason:
        'an update is either a subscription update (list_id, subscribed) or a channel opt-in (opted_in)',
    });
    return undefined;
  }
  if (isChannel) {
    if (typeof u.opted_in !== 'boolean')
      problems.push({ field: 'opted_in', reason: 'must be true or false' });
    if (problems.length) return undefined;
    return {
      record: {
        identifiers: collectIdentifiers({ email }),
        list_id: SVC_ALL,
        subscribed: u.opted_in as boolean,
        channel_opt_in: true,
        ...eventData,
      },
      echo: { email: email as string, opted_in: u.opted_in as boolean },
    };
  }
  if (!isList) problems.push({ field: 'list_id', reason: 'is required' });
  else if (typeof u.list_id !== 'string' || u.list_id.length === 0 || u.list_id.length > MAX_STRING) {
    problems.push({
      field: 'list_id',
      reason: `must be a list id (a string of 1 to ${MAX_STRING} characters)`,
    });
  }
  if (u.subscribed === undefined || u.subscribed === null)
    problems.push({ field: 'subscribed', reason: 'is required' });
  else if (typeof u.subscribed !== 'boolean')
    problems.push({ field: 'subscribed', reason: 'must be true or false' });
  if (problems.length) return undefined;
  const listId = u.list_id as string;
  const subscribed = u.subscribed as boolean;
  return {
    record: {
      identifiers: collectIdentifiers({ email }),
      list_id: listId,
      subscribed,
      channel_opt_in: false,
      ...eventData,
    },
    echo: { list_id: listId, email: email as string, subscribed },
  };
}

/** Members of an update that are the update itself; the others are further fields. */
const UPDATE_MEMBERS = new Set(['list_id', 'email', 'subscribed', 'opted_in']);
/** Event fields a further field may not set: the event's own time, and what the update says. */
const NOT_FURTHER = new Set(['ts', 'order', 'list_id', 'subscribed']);

/**
 * The further fields of an update that are event fields (spec "Lists and subscriptions": the browser
 * SDK's further fields are written to the events), typed as the event table says; written to the update's
 * `list`/`subscribe` event. Other further fields are ignored, as undefined fields are everywhere.
 */
function furtherEventFields(
  u: Record<string, unknown>,
  problems: Omit<Invalid, 'event'>[],
): { event_data?: Record<string, string | number | boolean> } {
  const data: Record<string, string | number | boolean> = {};
  for (const [field, value] of Object.entries(u)) {
    if (UPDATE_MEMBERS.has(field) || NOT_FURTHER.has(field) || value === null || value === undefined)
      continue;
    const type = Object.hasOwn(EVENT_DATA_FIELDS, field) ? EVENT_DATA_FIELDS[field] : undefined;
    if (type === 'string') {
      if (typeof value !== 'string' || value.length > MAX_STRING)
        problems.push({ field, reason: `must be a string of at most ${MAX_STRING} characters` });
      else data[field] = value;
    } else if (type === 'integer') {
      if (!Number.isSafeInteger(value)) problems.push({ field, reason: 'must be an integer' });
      else data[field] = value as number;
    } else if (type === 'boolean') {
      if (typeof value !== 'boolean') problems.push({ field, reason: 'must be true or false' });
      else data[field] = value;
    }
  }
  return Object.keys(data).length ? { event_data: data } : {};
}
