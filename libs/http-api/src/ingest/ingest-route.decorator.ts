import { applyDecorators, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiResponse, type ApiBodyOptions } from '@nestjs/swagger';
import { Auth, type Access } from '@cdp/http-common';
import { Idempotent } from '../idempotency/idempotent.decorator.js';

export interface IngestRouteOptions {
  /** The route's path under the controller's; none for the controller's own. */
  path?: string;
  /** Who may write: a public key (tracker id) or only a private key. */
  access?: Access;
  /** 202 where the write is processed asynchronously, 200 where the answer says what was applied. */
  status?: 200 | 202;
  /** What the success answer says (OpenAPI). */
  answer?: string;
  body?: ApiBodyOptions;
}

/**
 * The stack every ingest route wears: a POST answered `status` once the bus holds the write, replayed
 * from the idempotency store on a repeated `Idempotency-Key`, authorised by a key of `access` kind, its
 * body and answer documented. Route-specific extras (more answers, a raw body) stay beside it.
 */
export const IngestRoute = ({
  path,
  access = 'public',
  status = 202,
  answer = 'stored durably; processed asynchronously',
  body,
}: IngestRouteOptions = {}) =>
  applyDecorators(
    Post(path),
    HttpCode(status),
    Idempotent(),
    Auth(access),
    ...(body ? [ApiBody(body)] : []),
    ApiResponse({ status, description: answer }),
  );
