import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RawJsonBody } from '@cdp/contracts';
import { Inspector, acceptedEntry, rejectedEntry, type InspectorVerdict } from '@cdp/inspector';
import type { AuthedRequest } from '../auth/principal.js';
import { INGESTION_ROUTES } from './ingestion-routes.js';

/** The routes whose records the event inspector shows, and the kind it shows them as. */
const INSPECTED = INGESTION_ROUTES;

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
        if (kind) offerVerdicts(this.inspector, account, request, reply.statusCode, payload, route, kind);
      }
      done(null, payload);
    });
  }
}

function offerVerdicts(
  inspector: Inspector,
  account: string,
  request: FastifyRequest,
  status: number,
  payload: unknown,
  route: string,
  kind: string,
): void {
  const received = { requestId: request.id, route: routeOf(request, route), kind, status };
  // A body read off the main thread (POST /v3/events) is read again here, only for a watched account.
  const body = request.body instanceof RawJsonBody ? request.body.value() : request.body;
  if (status >= 400) {
    const detail = (parse(payload)?.detail ?? {}) as {
      invalids?: InspectorVerdict['invalids'];
      message?: string;
    };
    return inspector.offer(account, 1, () => rejectedEntry(received, body, detail));
  }
  if (status >= 300) return;
  const records: unknown[] = Array.isArray(body) ? (body as unknown[]) : [body];
  let dropped: Map<number, string[]> | undefined;
  const at = new Date().toISOString();
  inspector.offer(
    account,
    records.length,
    (index) => {
      // The 202's `dropped` is read once, and only when a record is shown.
      dropped ??= new Map(
        ((parse(payload)?.dropped ?? []) as { event: number; fields: string[] }[]).map((d) => [
          d.event,
          d.fields,
        ]),
      );
      return acceptedEntry(received, records[index], index, dropped.get(index), at);
    },
    (index) => ({ requestId: request.id, index }),
  );
}

/** The route as the sender wrote it (`POST /v3/objects/stores`), not its pattern. */
function routeOf(request: FastifyRequest, pattern: string): string {
  return pattern.includes(':') ? `${request.method} ${request.url.split('?')[0]}` : pattern;
}

/** An answer's JSON object, or undefined (not JSON, or not an object): what the taps read off an answer. */
export function parse(payload: unknown): Record<string, unknown> | undefined {
  if (typeof payload !== 'string') return undefined;
  try {
    const value: unknown = JSON.parse(payload);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
