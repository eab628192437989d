import { EngineUnavailableError } from '@cdp/contracts';

/**
 * Errors of the NATS and Redis clients that mean "the engine cannot be reached now" (connection down,
 * closed or reconnecting, no answer in time, JetStream not answering), by constructor name: the
 * API cannot answer what needs that engine, and says so with a 503 the client can come back from,
 * not a 500. Anything else stays an internal error.
 */
const UNREACHABLE = new Set([
  // @nats-io
  'ClosedConnectionError',
  'ConnectionError',
  'DrainingConnectionError',
  'NoRespondersError',
  'RequestError',
  'TimeoutError', // also @redis/client's command timeout, and AbortSignal.timeout's DOMException
  // @redis/client
  'ClientClosedError',
  'ClientOfflineError',
  'ConnectionTimeoutError',
  'DisconnectsClientError',
  'ReconnectStrategyError',
  'SocketClosedUnexpectedlyError',
  'SocketTimeoutError',
]);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);

/** Seconds the client is asked to wait when an engine is away, or undefined when `error` is no such case. */
export function engineUnavailable(
  error: unknown,
): { retryAfterSeconds: number; message: string } | undefined {
  if (error instanceof EngineUnavailableError)
    return { retryAfterSeconds: error.retryAfterSeconds, message: error.message };
  if (!(error instanceof Error)) return undefined;
  const name = error.constructor.name;
  const code = (error as { code?: unknown }).code;
  // JetStream answering "temporarily unavailable" (a server that is starting or electing).
  const jetStreamBusy = name.startsWith('JetStream') && code === 503;
  if (
    UNREACHABLE.has(name) ||
    UNREACHABLE.has(error.name) ||
    jetStreamBusy ||
    (typeof code === 'string' && SOCKET_CODES.has(code))
  )
    return {
      retryAfterSeconds: 1,
      message: `a service the request needs is unavailable right now (${error.message || name})`,
    };
  return undefined;
}
