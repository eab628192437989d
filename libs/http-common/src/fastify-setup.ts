import { randomUUID } from 'node:crypto';
import { Transform, type Duplex, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import type { AppConfig } from '@cdp/config';
import { ApiError, envelope, parseJsonBody, RawJsonBody, statusTitle } from '@cdp/contracts';
import type { Logger } from '@cdp/logger';
import { installRequestHashing } from './request-hash.js';
import { sendError } from './error-envelope.filter.js';

/** Fastify options: the request id doubles as the bus message id; the body limit counts decompressed bytes. */
export function fastifyOptions(config: AppConfig, logger: Logger): FastifyServerOptions {
  return {
    loggerInstance: logger,
    // One line per request is noise at this rate; failures are logged by the error filter.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomUUID(),
    bodyLimit: config.bodyLimitBytes,
    // `request.ip` (an event's `ip`) believes X-Forwarded-For only as far as the configured proxies go.
    trustProxy: config.trustedProxies.length ? config.trustedProxies : false,
    // SIGTERM: stop accepting, let requests in flight finish (their 202 means durable), then close.
    forceCloseConnections: 'idle',
    // A URL the router cannot read (bad percent-encoding: 400; a path segment over 100 characters: 414)
    // is answered before any hook or route runs: give it the envelope and the request id all the same.
    frameworkErrors: (error, request, reply) => {
      void reply.header('z-request-id', request.id);
      sendError(reply, request, error, logger);
    },
    clientErrorHandler: answerClientError,
  };
}

/**
 * A request Node's HTTP parser refuses (headers over 16 KiB: 431; malformed: 400; too slow: 408) never
 * reaches Fastify: answer it in the envelope, and say `Connection: close`, since the socket is destroyed
 * next; without it a keep-alive client sends its next request into the closed socket and loses it.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const status =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const message =
    status === 408
      ? 'the request was not received in time'
      : status === 431
        ? 'request headers are larger than 16 KiB'
        : 'the request is not valid HTTP';
  const body = JSON.stringify(envelope(status, { message }));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${statusTitle(status)}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nz-request-id: ${randomUUID()}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * Hooks every route shares: `z-request-id` on every response (spec "Authentication" rule 4),
 * and gzip-encoded bodies. Failures before a route runs reach the error-envelope filter through Nest.
 */
export function installHttpHooks(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('z-request-id', request.id);
    // Read the client's address while its socket is open: Node keeps it once read, but a socket the
    // client closed before it was ever read has none, and a browser's keepalive request from a closing
    // page can close its connection right after the body, so the event's `ip` would come out empty.
    void request.ip;
    done();
  });

  // Shutdown: a keep-alive connection that goes idle after close() began would hold the server open
  // until its keep-alive timeout. Tell clients to hang up, and close connections as they go idle.
  let closing = false;
  let sweeper: NodeJS.Timeout | undefined;
  fastify.addHook('preClose', (done) => {
    closing = true;
    sweeper = setInterval(() => fastify.server.closeIdleConnections(), 50);
    done();
  });
  fastify.addHook('onClose', (_instance, done) => {
    clearInterval(sweeper);
    done();
  });
  fastify.addHook('onSend', (request, reply, payload, done) => {
    if (closing) void reply.header('connection', 'close');
    else if (reply.statusCode === 413)
      return drainOversizedBody(request.raw, reply, fastify.initialConfig.bodyLimit ?? 0, () =>
        done(null, payload),
      );
    done(null, payload);
  });

  // A body nobody read (a route that answered before parsing it, such as a 401 to a GET with a stray gzip
  // body) must still be read to its end, or the connection stalls: piped into the gzip decoder, whose output
  // nobody reads, the request waits for a reader that never comes, and Node's own dump of an unread body
  // cannot resume a piped stream. The next request on that keep-alive connection would get no answer.
  fastify.addHook('onResponse', (request, _reply, done) => {
    const raw = request.raw;
    if (!raw.complete && !raw.destroyed) {
      raw.unpipe();
      raw.resume();
    }
    done();
  });

  // Every body is read by one parser: UTF-8 only, no lone surrogate, no `__proto__`, each refused on
  // its field (Fastify's own parser replaces bad bytes with U+FFFD and refuses `__proto__` as bad JSON).
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    // A route that reads its body on a worker thread (`rawJsonBody` in its route config) gets the bytes.
    if ((request.routeOptions.config as { rawJsonBody?: boolean } | undefined)?.rawJsonBody)
      return done(null, new RawJsonBody(body as Buffer));
    // An empty body is no body: many clients send `Content-Type: application/json` with every request (a
    // DELETE, say). A route that takes a body answers as it does to a request that sent none.
    if ((body as Buffer).length === 0) return done(null, undefined);
    try {
      done(null, parseJsonBody(body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  // An unsubscribe link's one-click POST is a form (RFC 8058: `List-Unsubscribe=One-Click`, sent
  // urlencoded or multipart), and so is its confirmation page's: read and ignored, the token says all.
  for (const formType of ['application/x-www-form-urlencoded', 'multipart/form-data'])
    fastify.addContentTypeParser(formType, { parseAs: 'buffer' }, (_request, _body, done) => done(null, {}));

  fastify.addHook('preParsing', (request, _reply, payload, done) => {
    // Every body of this API is JSON (spec "Endpoints"); anything else is refused before parsing.
    const type = String(request.headers['content-type'] ?? '');
    if (!hasBody(request.headers)) return done(null, payload);
    // A file upload (the API's own signed upload URL) streams its bytes as sent.
    if ((request.routeOptions.config as { rawUpload?: boolean } | undefined)?.rawUpload)
      return done(null, payload);
    const form = FORM_BODY_PATH.test(request.url) && FORM_TYPE.test(type);
    if (!form && !/^application\/json\s*(;|$)/i.test(type)) {
      return done(
        new ApiError(415, { message: 'request body must be sent with Content-Type: application/json' }),
      );
    }
    const encoding = String(request.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding === 'identity') return done(null, payload);
    if (encoding !== 'gzip' && encoding !== 'x-gzip') {
      return done(
        new ApiError(415, { message: `Content-Encoding ${encoding} is not supported; use gzip or none` }),
      );
    }
    // Fastify compares Content-Length with the bytes received and the body limit with the bytes
    // produced: count the compressed bytes so both checks mean what they should.
    const counter = new EncodedLengthCounter();
    const gunzip = createGunzip();
    payload.on('error', (err) => gunzip.destroy(err));
    gunzip.on('error', () => undefined);
    const decoded = payload.pipe(counter).pipe(gunzip) as typeof gunzip & { receivedEncodedLength?: number };
    Object.defineProperty(decoded, 'receivedEncodedLength', {
      get: () => counter.length,
      configurable: true,
    });
    done(null, decoded);
  });

  // After the gzip decoder: an Idempotency-Key binds to the decoded body.
  installRequestHashing(fastify);
}

/**
 * Fastify answers 413 before reading an oversized body. A server that closes a connection with unread
 * bytes in it makes the kernel reset it, and a client still uploading then gets a broken pipe, or loses
 * the answer it had not read yet — whenever the answer wins the race with the upload, which is often, and
 * always for a client that sent `Connection: close` (the server hangs up after the answer). So a body up
 * to twice the limit is read to its end and discarded first, and only then answered: nothing is left
 * unread whatever happens to the connection next. Beyond that (declared, or counted when chunked),
 * hanging up is cheaper.
 */
function drainOversizedBody(
  raw: IncomingMessage,
  reply: FastifyReply,
  limit: number,
  answer: () => void,
): void {
  const declared = Number(raw.headers['content-length'] ?? Number.NaN);
  if (raw.complete || raw.destroyed || declared > 2 * limit) return answer();
  reply.removeHeader('connection');
  raw.unpipe(); // a gzip decoder it fed is done with
  let read = 0;
  let answered = false;
  const finish = () => {
    if (answered) return;
    answered = true;
    raw.off('data', count);
    answer();
  };
  const count = (chunk: Buffer) => {
    read += chunk.length;
    if (read <= 2 * limit) return;
    void reply.header('connection', 'close');
    finish();
  };
  raw.on('data', count);
  raw.once('end', finish);
  raw.once('close', finish);
  raw.once('error', finish);
  raw.resume();
}

/** The one route that takes a form body: an unsubscribe link (libs/http-api lists). */
const FORM_BODY_PATH = /^\/v3\/lists\/unsubscribe(\?|$)/;
const FORM_TYPE = /^(application\/x-www-form-urlencoded|multipart\/form-data)\s*(;|$)/i;

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

class EncodedLengthCounter extends Transform {
  length = 0;
  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.length += chunk.length;
    callback(null, chunk);
  }
}
