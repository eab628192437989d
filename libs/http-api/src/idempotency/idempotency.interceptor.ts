import { createHash } from 'node:crypto';
import {
  Inject,
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants.js';
import type { FastifyReply } from 'fastify';
import { catchError, from, mergeMap, of, type Observable } from 'rxjs';
import { ApiError, RawJsonBody } from '@cdp/contracts';
import {
  derivedRequestId,
  idempotencyKeyProblem,
  IdempotencyRecords,
  type Begin,
  type Claim,
  type StoredAnswer,
} from '@cdp/idempotency';
import { faultPoint } from '@cdp/faults';
import { LOGGER, type Logger } from '@cdp/logger';
import type { AuthedRequest } from '../auth/principal.js';
import { IDEMPOTENCY_HEADER, requestHash } from '@cdp/http-common';
import { asResend } from './resend-scope.js';

/** What the Optimizely SDKs put in every event's data: a uuid per event, kept the same on a resend. */
const IDEMPOTENCE_ID = Buffer.from('"idempotence_id"');

/**
 * Optimizely's SDKs send no Idempotency-Key but resend a refused batch with identical bytes, each event
 * carrying its `idempotence_id`: such a batch is its own key (its request hash), so a resend is
 * answered from the first attempt and stored once (docs/api-notes.md "Optimizely SDK events").
 */
function sdkResendKey(request: AuthedRequest): string | undefined {
  const body = request.body;
  if (!(body instanceof RawJsonBody) || !body.bytes.includes(IDEMPOTENCE_ID)) return undefined;
  // The key names the body's bytes (the request hash covers bodies sent with a key header only).
  return `svc-idempotence-${createHash('sha256').update(body.bytes).digest('hex')}`;
}

/**
 * `Idempotency-Key` on a write route. Runs after the auth guard (the key is per account) and the rate
 * limit (a refused request holds no key), around validation and publishing:
 * - the first request with a key holds it while it runs and publishes under a message id derived from
 *   (account, key, request), so any later attempt of the same request is the same bus message;
 * - its 2xx answer is kept and given again, `z-request-id` included, to every resend of the same request;
 * - another request with the key is a 422; one while the first runs is a 409 with Retry-After;
 * - a 4xx lets the key go (nothing was stored); a 5xx lets it go too, the next attempt a resend.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly records: IdempotencyRecords,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<AuthedRequest>();
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    const key = request.headers[IDEMPOTENCY_HEADER] ?? sdkResendKey(request);
    const account = request.principal?.account;
    if (key === undefined || account === undefined) return next.handle();
    const problem = idempotencyKeyProblem(key);
    if (problem !== undefined || typeof key !== 'string')
      throw ApiError.invalid([{ field: 'Idempotency-Key', reason: problem ?? 'must be sent once' }]);

    const hash = requestHash(request);
    let begin: Begin;
    try {
      begin = await this.records.begin(account, key, hash, request.id);
    } catch (err) {
      // Without its record a resend could not be recognised: refuse rather than risk storing it twice.
      this.logger.warn({ err, reqId: request.id }, 'idempotency records unavailable');
      throw ApiError.unavailable('the request was not stored: Idempotency-Key records are unavailable', 1);
    }
    switch (begin.kind) {
      case 'mismatch':
        throw new ApiError(422, {
          message:
            'Idempotency-Key was already used with a different request (method, path or body); use a new key',
        });
      case 'in-flight':
        throw new ApiError(
          409,
          { message: 'a request with this Idempotency-Key is still in flight; retry once it is answered' },
          { 'retry-after': String(begin.retryAfterSeconds) },
        );
      case 'replay':
        void reply.headers({ 'z-request-id': begin.answer.requestId, 'idempotent-replayed': 'true' });
        return of(begin.answer.body);
      case 'proceed':
        return this.proceed(context, next, request, reply, begin.claim, begin.resend);
    }
  }

  private proceed(
    context: ExecutionContext,
    next: CallHandler,
    request: AuthedRequest,
    reply: FastifyReply,
    claim: Claim,
    resend: boolean,
  ): Observable<unknown> {
    const id = derivedRequestId(claim.account, claim.key, claim.hash);
    if (resend)
      this.logger.info({ reqId: request.id, id }, 'resending a request that may have been published');
    // Every later attempt of this request publishes under the same id, and answers with it.
    request.id = id;
    void reply.header('z-request-id', id);
    faultPoint('api.idempotency.held'); // a crash here: the key is held, nothing published

    const status =
      (Reflect.getMetadata(HTTP_CODE_METADATA, context.getHandler()) as number | undefined) ?? 200;
    // Nest binds the route's async context when handle() is called: the publish inside sees the scope.
    const handled = resend ? asResend(() => next.handle()) : next.handle();
    return handled.pipe(
      mergeMap((body: unknown) => from(this.answered(claim, { status, body, requestId: id }))),
      catchError((err: unknown) => from(this.failed(claim, err))),
    );
  }

  private async answered(claim: Claim, answer: StoredAnswer): Promise<unknown> {
    faultPoint('api.idempotency.answer'); // a crash here: published, answer not kept
    try {
      await this.records.finish(claim, answer);
    } catch (err) {
      // The request is durable: answer it. The key's lease runs out and a resend is published again
      // under the same id (deduplicated), then answered and recorded.
      this.logger.warn(
        { err, reqId: answer.requestId },
        'could not record the answer of an idempotent request',
      );
    }
    return answer.body;
  }

  /** A 4xx published nothing: the key is free. Anything else may have reached the bus. */
  private async failed(claim: Claim, err: unknown): Promise<never> {
    const maybePublished = !(err instanceof ApiError && err.status < 500);
    try {
      await this.records.abandon(claim, maybePublished);
    } catch (e) {
      this.logger.warn({ err: e }, 'could not release an idempotency key');
    }
    throw err;
  }
}
