import { applyDecorators, UseInterceptors } from '@nestjs/common';
import { ApiHeader, ApiResponse } from '@nestjs/swagger';
import { IdempotencyInterceptor } from './idempotency.interceptor.js';

/**
 * A write route that honours `Idempotency-Key` (README "Idempotent retries"): a resend of the same request
 * within the window gets the first answer again and stores nothing twice.
 */
export const Idempotent = () =>
  applyDecorators(
    UseInterceptors(IdempotencyInterceptor),
    ApiHeader({
      name: 'Idempotency-Key',
      required: false,
      description:
        'optional, 1–255 printable ASCII characters, per account: the same key with the same method, path and ' +
        'body (after gzip decoding) within 24 hours gets the first answer again (same status, body and ' +
        'z-request-id) and is stored once',
    }),
    ApiResponse({
      status: 409,
      description: 'a request with this Idempotency-Key is still in flight (Retry-After)',
    }),
    ApiResponse({ status: 422, description: 'this Idempotency-Key was used with a different request' }),
  );
