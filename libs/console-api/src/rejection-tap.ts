import {
  Inject,
  Injectable,
  type BeforeApplicationShutdown,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RawJsonBody } from '@cdp/contracts';
import { INGESTION_ROUTES, parseAnswer as parse } from '@cdp/http-api/inspector';
import { LOGGER, type Logger } from '@cdp/logger';
import { ConsoleStoreReads } from './reads/console-store-reads.js';
import { RejectionOutbox, RejectionTally, type Refusal } from './rejection-tally.js';

/** The counts go to the store this often (a few rows per account that had refusals; nothing otherwise). */
export const REJECTIONS_FLUSH_MS = 5_000;
/** The routes whose records carry an event type of their own. */
const TYPED = new Set(['events', 'v2 events']);
const BATCH_REFUSED = 'refused with its batch: another record was invalid';

/**
 * Counts, per account, the records the ingestion routes refuse before the 202 (any 4xx once the key named
 * an account) and the fields dropped from accepted ones, from the answer the client gets: one Fastify
 * hook after the answer is serialised. An accepted request costs a status check (and, when its 202 lists
 * dropped fields, a parse of that small answer); a refused one is counted into memory. The counts reach
 * the store every REJECTIONS_FLUSH_MS as a few summed rows (ConsoleStoreReads.addRejections: here, or
 * the store's owner over NATS), never a write per request.
 */
@Injectable()
export class RejectionTap implements OnModuleInit, BeforeApplicationShutdown, OnModuleDestroy {
  private readonly tally = new RejectionTally();
  private readonly outbox = new RejectionOutbox(this.tally);
  private timer: ReturnType<typeof setInterval> | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly adapter: HttpAdapterHost,
    private readonly reads: ConsoleStoreReads,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapter.httpAdapter.getInstance<FastifyInstance>();
    fastify.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done) => {
      const status = reply.statusCode;
      if (status >= 400 ? status < 500 : typeof payload === 'string' && payload.includes('"dropped"')) {
        const account = (request as FastifyRequest & { principal?: { account: string } }).principal?.account;
        const kind = INGESTION_ROUTES[`${request.method} ${request.routeOptions.url ?? ''}`];
        if (account !== undefined && kind !== undefined) {
          try {
            this.tally.add(account, Date.now(), refusalsOf(status, payload, request, kind));
          } catch (err) {
            this.logger.warn({ err }, 'a refusal could not be counted');
          }
        }
      }
      done(null, payload);
    });
    this.timer = setInterval(() => void this.flush(), REJECTIONS_FLUSH_MS);
    this.timer.unref();
  }

  /** The last counts, before the store closes (a flush running now, then what came during it). */
  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
    await this.flush();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** Hands what was counted to the store; a batch that fails goes again, as it was, with the next flush. */
  flush(): Promise<void> {
    if (this.flushing || this.outbox.empty) return this.flushing ?? Promise.resolve();
    const batches = this.outbox.take(Date.now());
    this.flushing = (async () => {
      for (const batch of batches) {
        try {
          await this.reads.addRejections(batch.account, batch.counts, batch.id);
        } catch (err) {
          this.outbox.failed(batch);
          this.logger.warn(
            { err, account: batch.account },
            'rejection counts not stored yet; the next flush retries',
          );
        }
      }
    })().finally(() => (this.flushing = undefined));
    return this.flushing;
  }
}

/**
 * What one answer refused: each record of a 4xx that names invalid records, with its first invalid
 * (`field: reason`); a request refused whole, once, with its message; or, for a 2xx, each field its
 * `dropped` lists.
 */
export function refusalsOf(
  status: number,
  payload: unknown,
  request: FastifyRequest,
  kind: string,
): Refusal[] {
  const answer = parse(payload);
  if (status < 400) {
    const dropped = (answer?.dropped ?? []) as { fields?: unknown }[];
    return dropped.flatMap((d) =>
      (Array.isArray(d.fields) ? d.fields : []).map((f): Refusal => ({
        outcome: 'dropped',
        type: kind,
        reason: `dropped field ${String(f)}`,
      })),
    );
  }
  const detail = (answer?.detail ?? {}) as {
    message?: unknown;
    invalids?: { field?: unknown; reason?: unknown; event?: unknown }[];
  };
  const invalids = Array.isArray(detail.invalids) ? detail.invalids : [];
  // A request refused whole (rate limit, size, key) counts once, under its message: its body is not
  // parsed again here (refusing it is meant to save that work). Only an answer naming invalid records
  // needs the records, for their types.
  if (invalids.length === 0) {
    const message = typeof detail.message === 'string' ? detail.message : `HTTP ${status}`;
    return [{ outcome: 'rejected', type: kind, reason: message }];
  }
  let body: unknown;
  try {
    body = request.body instanceof RawJsonBody ? request.body.value() : request.body;
  } catch {
    body = undefined;
  }
  const records: unknown[] = Array.isArray(body) ? body : [body];
  const byRecord = new Map<number, string>();
  for (const i of invalids) {
    const at = typeof i.event === 'number' ? i.event : records.length === 1 ? 0 : undefined;
    const field = Array.isArray(i.field) ? i.field.join(' or ') : typeof i.field === 'string' ? i.field : '';
    const reason = typeof i.reason === 'string' ? i.reason : '';
    if (at !== undefined && !byRecord.has(at)) byRecord.set(at, `${field}: ${reason}`);
  }
  return records.map((record, index) => ({
    outcome: 'rejected',
    type: typeOf(record, kind),
    reason: byRecord.get(index) ?? BATCH_REFUSED,
  }));
}

function typeOf(record: unknown, kind: string): string {
  if (!TYPED.has(kind) || typeof record !== 'object' || record === null) return kind;
  const type = (record as { type?: unknown }).type;
  return typeof type === 'string' && type.trim() !== '' ? type : kind;
}
