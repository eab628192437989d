import type { InspectorVerdict } from './inspector-entry.js';

/** A rejected request's body is shown cut to this many records: enough to see the bad ones. */
export const REJECTED_BODY_RECORDS = 50;

export interface Received {
  requestId: string;
  /** `POST /v3/events`; the bulk loader names its file: `bulk incoming/<file>`. */
  route: string;
  kind: string;
  status: number;
}

/**
 * The entry of one accepted record, with the fields dropped from it. The API builds these from a 2xx;
 * the bulk-file loader (issue 15) builds them the same way for each file's records, with its own route
 * (`bulk <file>`), and offers them with `Inspector.offer(account, records.length, (i) => acceptedEntry(…))`.
 */
export function acceptedEntry(
  received: Received,
  body: unknown,
  index: number,
  dropped?: string[],
  at = new Date().toISOString(),
): InspectorVerdict {
  return {
    type: 'verdict',
    id: `${received.requestId}#${index}`,
    at,
    request_id: received.requestId,
    index,
    route: received.route,
    kind: received.kind,
    status: received.status,
    verdict: 'accepted',
    body,
    ...(dropped?.length ? { dropped } : {}),
  };
}

/** One entry for a refused request: its 4xx, every invalid with its reason, and (the start of) its body. */
export function rejectedEntry(
  received: Received,
  body: unknown,
  answer: { invalids?: InspectorVerdict['invalids']; message?: string },
  at = new Date().toISOString(),
): InspectorVerdict {
  return {
    type: 'verdict',
    id: received.requestId,
    at,
    request_id: received.requestId,
    route: received.route,
    kind: received.kind,
    status: received.status,
    verdict: 'rejected',
    body:
      Array.isArray(body) && body.length > REJECTED_BODY_RECORDS
        ? body.slice(0, REJECTED_BODY_RECORDS)
        : body,
    ...(answer.invalids ? { invalids: answer.invalids } : {}),
    ...(answer.message !== undefined ? { message: answer.message } : {}),
  };
}
