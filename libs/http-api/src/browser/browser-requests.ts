import type { IncomingMessage } from 'node:http';
import { Injectable, RequestMethod, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, HttpAdapterHost, Reflector } from '@nestjs/core';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ACCESS_KEY, IDEMPOTENCY_HEADER, type Access } from '@cdp/http-common';

/** What a browser may send to a public-key route: the SDK's headers. */
const ALLOWED_HEADERS = 'content-type, content-encoding, x-api-key, svc-tracker-id, idempotency-key';
/** What the SDK reads of an answer: Retry-After for its backoff; the rest for people debugging. */
const EXPOSED_HEADERS =
  'z-request-id, retry-after, idempotent-replayed, ratelimit-limit, ratelimit-remaining, ratelimit-reset';
/** Browsers keep a preflight this long (Chromium caps it at 2 hours, Firefox at 24). */
const PREFLIGHT_MAX_AGE_SECONDS = 86_400;

/** Requests whose key came in the query string (a beacon), not in a header. */
const keysFromQuery = new WeakSet<IncomingMessage>();

export function keyCameFromQuery(request: FastifyRequest): boolean {
  return keysFromQuery.has(request.raw);
}

interface PublicRoute {
  method: string;
  path: RegExp;
}

/**
 * Browsers on any site may call the public-key routes (spec "Authentication": the public key is for
 * browser use): CORS answers, preflights cached by the browser, and for `navigator.sendBeacon`, which
 * cannot set headers, the key and the idempotency id as query parameters (`api_key`, `idempotency_key`)
 * and a `text/plain` body read as JSON. Which routes are public is read from their `@Auth('public')`.
 */
@Injectable()
export class BrowserRequests implements OnModuleInit {
  private routes: PublicRoute[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
    private readonly adapter: HttpAdapterHost,
  ) {}

  onModuleInit(): void {
    this.routes = this.publicRoutes();
    const fastify = this.adapter.httpAdapter.getInstance<FastifyInstance>();
    fastify.addHook('onRequest', (request, reply, done) => {
      if (this.handle(request, reply)) return;
      done();
    });
  }

  /** True when the request was answered here (a preflight). */
  private handle(request: FastifyRequest, reply: FastifyReply): boolean {
    const origin = request.headers.origin;
    const path = request.url.split('?', 1)[0] ?? '';
    if (request.method === 'OPTIONS') {
      const wanted = request.headers['access-control-request-method'];
      if (!origin || typeof wanted !== 'string' || !this.isPublic(wanted, path)) return false;
      void reply
        .code(204)
        .headers({
          'access-control-allow-origin': '*',
          'access-control-allow-methods': wanted.toUpperCase(),
          'access-control-allow-headers': ALLOWED_HEADERS,
          'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
        })
        .send();
      return true;
    }
    if (!this.isPublic(request.method, path)) return false;
    if (origin)
      void reply.headers({
        'access-control-allow-origin': '*',
        'access-control-expose-headers': EXPOSED_HEADERS,
      });
    this.readBeacon(request, path);
    return false;
  }

  private readBeacon(request: FastifyRequest, path: string): void {
    const query = request.query as Record<string, unknown> | undefined;
    const keyHeader = path.startsWith('/v2/') ? 'svc-tracker-id' : 'x-api-key';
    const headers = request.headers;
    if (typeof query?.api_key === 'string' && headers[keyHeader] === undefined) {
      headers[keyHeader] = query.api_key;
      keysFromQuery.add(request.raw);
      // A beacon's body can only be text/plain without a preflight; it is the same JSON.
      if (/^text\/plain\s*(;|$)/i.test(String(headers['content-type'] ?? '')))
        headers['content-type'] = 'application/json';
    }
    if (typeof query?.idempotency_key === 'string' && headers[IDEMPOTENCY_HEADER] === undefined)
      headers[IDEMPOTENCY_HEADER] = query.idempotency_key;
  }

  private isPublic(method: string, path: string): boolean {
    const m = method.toUpperCase();
    return this.routes.some((r) => r.method === m && r.path.test(path));
  }

  private publicRoutes(): PublicRoute[] {
    const routes: PublicRoute[] = [];
    for (const wrapper of this.discovery.getControllers()) {
      const type = wrapper.metatype as (new (...args: never[]) => unknown) | undefined;
      if (!type?.prototype) continue;
      const base = String(Reflect.getMetadata(PATH_METADATA, type) ?? '');
      for (const name of Object.getOwnPropertyNames(type.prototype)) {
        const handler = (type.prototype as Record<string, unknown>)[name];
        if (name === 'constructor' || typeof handler !== 'function') continue;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined) continue;
        const access = this.reflector.getAllAndOverride<Access | undefined>(ACCESS_KEY, [handler, type]);
        if (access !== 'public') continue;
        const sub = String(Reflect.getMetadata(PATH_METADATA, handler) ?? '');
        const pattern = `/${[base, sub]
          .map((p) => p.replace(/^\/+|\/+$/g, ''))
          .filter(Boolean)
          .join('/')}`;
        const source = pattern
          .split('/')
          .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
          .join('/');
        routes.push({ method: RequestMethod[method], path: new RegExp(`^${source}/?$`) });
      }
    }
    return routes;
  }
}
