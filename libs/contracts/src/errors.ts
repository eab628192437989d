/**
 * The one error envelope of every route, v2 included (spec "Errors" + spec/NOTES.md):
 * `{title, status, timestamp, detail: {invalids: [{field, reason}]}}` or `{..., detail: {message}}`.
 */
export interface Invalid {
  /** A parameter name, or several where one of them is required. */
  field: string | string[];
  reason: string;
  /** Index of the record in a batch request. */
  event?: number;
  /**
   * A sentence naming the field and the reason, beside them on every invalid of a batch record: the
   * original API's clients type an ingestion invalid as `{event, message}`.
   */
  message?: string;
}

/** The sentence of a batch record's invalid: `record 2: data.ts must be a unix timestamp…`. */
export function invalidMessage(invalid: Pick<Invalid, 'field' | 'reason' | 'event'>): string {
  const field = Array.isArray(invalid.field) ? `one of ${invalid.field.join(', ')}` : invalid.field;
  return `record ${invalid.event ?? 0}: ${field} ${invalid.reason}`;
}

export type ErrorDetail = { invalids: Invalid[] } | { message: string };

export interface ErrorEnvelope {
  title: string;
  status: number;
  timestamp: string;
  detail: ErrorDetail;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  410: 'Gone',
  413: 'Payload Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

export function statusTitle(status: number): string {
  return TITLES[status] ?? (status >= 500 ? 'Internal Server Error' : 'Bad Request');
}

/** A failure the client should see as it is. One exception filter turns it into the envelope. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly detail: ErrorDetail,
    /** Extra response headers, such as Retry-After. */
    readonly headers: Record<string, string> = {},
  ) {
    super('message' in detail ? detail.message : `${detail.invalids.length} invalid field(s)`);
  }

  /** Invalids of batch records (those with `event`) get their `message` here, wherever they come from. */
  static invalid(invalids: Invalid[]): ApiError {
    return new ApiError(400, {
      invalids: invalids.map((inv) =>
        inv.event === undefined || inv.message !== undefined ? inv : { ...inv, message: invalidMessage(inv) },
      ),
    });
  }
  static badRequest(message: string): ApiError {
    return new ApiError(400, { message });
  }
  static unauthorized(): ApiError {
    return new ApiError(401, { message: 'could not be authenticated' });
  }
  static forbidden(message = 'this key is not allowed to call this endpoint; use the private key'): ApiError {
    return new ApiError(403, { message });
  }
  static notFound(message: string): ApiError {
    return new ApiError(404, { message });
  }
  static unavailable(message: string, retryAfterSeconds: number): ApiError {
    return new ApiError(503, { message }, { 'retry-after': String(retryAfterSeconds) });
  }

  envelope(now = new Date()): ErrorEnvelope {
    return envelope(this.status, this.detail, now);
  }
}

/**
 * An engine a request needs (NATS, Redis, the store) cannot be reached right now. The API answers 503
 * with Retry-After: the client comes back, nothing was promised.
 */
export class EngineUnavailableError extends Error {
  override name = 'EngineUnavailableError';
  constructor(
    readonly engine: string,
    message: string,
    readonly retryAfterSeconds = 1,
  ) {
    super(`${engine} is unavailable: ${message}`);
  }
}

export function envelope(status: number, detail: ErrorDetail, now = new Date()): ErrorEnvelope {
  return { title: statusTitle(status), status, timestamp: now.toISOString(), detail };
}

/** Body of every 202 of the asynchronous ingestion endpoints (spec/NOTES.md "Responses"). */
export interface AcceptedBody {
  title: 'Accepted';
  status: 202;
  timestamp: string;
  /**
   * Fields the account has not defined, per record (its index in the batch): accepted records keep
   * everything else, and the sender sees what did not land (spec "Custom objects and fields").
   */
  dropped?: { event: number; fields: string[] }[];
}

export function accepted(records: readonly { dropped?: string[] }[] = [], now = new Date()): AcceptedBody {
  const body: AcceptedBody = { title: 'Accepted', status: 202, timestamp: now.toISOString() };
  const dropped = records.flatMap((r, event) => (r.dropped?.length ? [{ event, fields: r.dropped }] : []));
  if (dropped.length) body.dropped = dropped;
  return body;
}
