import { Catch, HttpException, Inject, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { throwError } from 'rxjs';
import { ApiError, envelope, type ErrorEnvelope } from '@cdp/contracts';
import { LOGGER, type Logger } from '@cdp/logger';
import { engineUnavailable } from './engine-unavailable.js';

/**
 * Turns every failure into the spec's error envelope (spec/NOTES.md "Errors"), whether it came from
 * a route (ApiError), from Nest (HttpException: unknown route, bad method) or from Fastify before the
 * route ran (body too large, bad JSON, unsupported media type).
 */
@Catch()
export class ErrorEnvelopeFilter implements ExceptionFilter {
  constructor(@Inject(LOGGER) private readonly logger: Logger) {}

  catch(error: unknown, host: ArgumentsHost): unknown {
    // The processor's handlers share this global filter; their failures go back to the bus transport.
    if (host.getType() !== 'http') return throwError(() => error);
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    sendError(reply, request, error, this.logger);
    return undefined;
  }
}

export function toEnvelope(error: unknown): { body: ErrorEnvelope; headers: Record<string, string> } {
  if (error instanceof ApiError) return { body: error.envelope(), headers: error.headers };
  if (error instanceof HttpException) {
    const status = error.getStatus();
    const response = error.getResponse();
    const message =
      typeof response === 'object' && response !== null && 'message' in response
        ? String(response.message)
        : error.message;
    return { body: envelope(status, { message }), headers: {} };
  }
  const fastify = error as { statusCode?: number; code?: string; message?: string };
  if (typeof fastify.statusCode === 'number' && fastify.statusCode >= 400 && fastify.statusCode < 500) {
    return { body: envelope(fastify.statusCode, { message: clientMessage(fastify) }), headers: {} };
  }
  // NATS or Redis away: nothing is wrong with the request; the client comes back after Retry-After.
  const away = engineUnavailable(error);
  if (away) {
    return {
      body: envelope(503, { message: away.message }),
      headers: { 'retry-after': String(away.retryAfterSeconds) },
    };
  }
  return {
    body: envelope(500, { message: 'internal error; the request id identifies it in the logs' }),
    headers: {},
  };
}

function clientMessage(error: { code?: string; message?: string }): string {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'request body is larger than 8 MiB (after decompression)';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'request body must be sent with Content-Type: application/json';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'request body is empty';
    case 'FST_ERR_BAD_URL':
      return 'the URL is not validly percent-encoded';
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return 'a path parameter is longer than 100 characters';
    default:
      return error.message ?? 'bad request';
  }
}

export function sendError(
  reply: FastifyReply,
  request: FastifyRequest,
  error: unknown,
  logger: Logger,
): void {
  const { body, headers } = toEnvelope(error);
  if (body.status === 503) logger.warn({ reqId: request.id, err: error }, 'request refused: 503');
  else if (body.status >= 500) logger.error({ reqId: request.id, err: error }, 'request failed');
  void reply.status(body.status).headers(headers).type('application/json').send(body);
}
