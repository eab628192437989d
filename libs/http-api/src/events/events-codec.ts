import { accepted, ApiError, parseJsonBody, type ErrorDetail } from '@cdp/contracts';
import type { CustomFields, CustomIdentifierNames } from '@cdp/domain';
import { eventsValidator } from '@cdp/records';

/** What reading a `POST /v3/events` body needs besides the body: everything can cross to a worker thread. */
export interface EventsEncodeContext {
  /** The time of receipt (the default `ts`). */
  nowMs: number;
  custom: CustomFields;
  customIds?: CustomIdentifierNames;
  /** The address every event's `ip` is set to (a public key's request); undefined: kept as sent. */
  clientIp?: string;
}

/** A body read, validated, normalized and encoded as the bus message's records; or the 4xx it gets. */
export type EncodedEvents =
  | { ok: true; count: number; recordsJson: string; dropped: { event: number; fields: string[] }[] }
  | { ok: false; status: number; detail: ErrorDetail; headers: Record<string, string> };

/**
 * The whole of `POST /v3/events` before the bus, from the body's bytes: parse (parseJsonBody's rules),
 * validate and normalize (eventsValidator), the client's `ip`, and the records' JSON for the bus. Pure,
 * so it runs on a worker thread (IngestCodec) as well as here; the records are parsed once on the whole
 * path to the processor's delivery, which parses the text the bus wrote.
 */
export function encodeEventsBody(bytes: Uint8Array, context: EventsEncodeContext): EncodedEvents {
  try {
    const body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return encodeEventRecords(parseJsonBody(body), context);
  } catch (err) {
    return refusal(err);
  }
}

/** The same from a body parsed already (a request that came without a JSON body). */
export function encodeEventRecords(body: unknown, context: EventsEncodeContext): EncodedEvents {
  try {
    const records = eventsValidator.parse(body, context);
    // See client-ip.ts: a public key's events take the request's address.
    if (context.clientIp !== undefined) for (const record of records) record.data.ip = context.clientIp;
    return {
      ok: true,
      count: records.length,
      recordsJson: JSON.stringify(records),
      dropped: accepted(records).dropped ?? [],
    };
  } catch (err) {
    return refusal(err);
  }
}

function refusal(err: unknown): EncodedEvents {
  if (!(err instanceof ApiError)) throw err;
  return { ok: false, status: err.status, detail: err.detail, headers: err.headers };
}

/** The ApiError a refusal stands for, on the thread that answers. */
export function refusalError(result: Extract<EncodedEvents, { ok: false }>): ApiError {
  return new ApiError(result.status, result.detail, result.headers);
}
