import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Inspector, acceptedEntries, rejectedEntry, type InspectorVerdict } from '@cdp/inspector';
import type { AuthedRequest } from '../auth/principal.js';

/** The routes whose records the event inspector shows, and the kind it shows them as. */
const INSPECTED: Record<string, string> = {
  'POST /v3/events': 'events',
  'POST /v3/profiles': 'profiles',
  'POST /v3/objects/:object': 'objects',
  'POST /v3/objects/products': 'products',
  'POST /v3/objects/orders': 'orders',
  'POST /v2/entities': 'v2 entities',
  'POST /v2/events': 'v2 events',
  'POST /v3/lists/subscriptions': 'subscriptions',
  'POST /v3/optout': 'optout',
};

/**
 * Offers each ingestion request's verdict to the event inspector, from the answer the client gets: the
 * records of a 2xx (with the fields dropped from each), or a 4xx with its invalids. One Fastify hook after
 * the answer is serialised; for an account no console watches it costs a map lookup. A request refused
 * before its key named an account (401) belongs to no account and is not shown.
 */
@Injectable()
export class InspectorTap implements OnModuleInit {
  constructor(
    private readonly adapter: HttpAdapterHost,
    private readonly inspector: Inspector,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapter.httpAdapter.getInstance<FastifyInstance>();
    fastify.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done) => {
      const account = (request as AuthedRequest).principal?.account;
      if (account !== undefined && this.inspector.watching(account)) {
        const route = `${request.method} ${request.routeOptions.url ?? ''}`;
        const kind = INSPECTED[route];
        if (kind)
          this.inspector.offer(account, () => entries(request, reply.statusCode, payload, route, kind));
      }
      done(null, payload);
    });
  }
}

function entries(
  request: FastifyRequest,
  status: number,
  payload: unknown,
  route: string,
  kind: string,
): InspectorVerdict[] {
  const received = { requestId: request.id, route: routeOf(request, route), kind, status };
  const answer = parse(payload);
  if (status >= 400) {
    const detail = (answer?.detail ?? {}) as { invalids?: InspectorVerdict['invalids']; message?: string };
    return [rejectedEntry(received, request.body, detail)];
  }
  if (status >= 300) return [];
  const body = request.body;
  const records = Array.isArray(body) ? body : [body];
  const dropped = new Map<number, string[]>();
  for (const d of (answer?.dropped ?? []) as { event: number; fields: string[] }[])
    dropped.set(d.event, d.fields);
  return acceptedEntries(received, records, dropped);
}

/** The route as the sender wrote it (`POST /v3/objects/stores`), not its pattern. */
function routeOf(request: FastifyRequest, pattern: string): string {
  return pattern.includes(':') ? `${request.method} ${request.url.split('?')[0]}` : pattern;
}

function parse(payload: unknown): Record<string, unknown> | undefined {
  if (typeof payload !== 'string') return undefined;
  try {
    const value: unknown = JSON.parse(payload);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
