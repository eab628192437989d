import { Inject, Injectable, Optional } from '@nestjs/common';
import { EngineUnavailableError } from '@cdp/contracts';
import { AnalyticStore, COMMITS_TABLE, INGEST_REJECTIONS, type RejectionRow } from '@cdp/store';
import type {
  ConsentChangeView,
  LinkView,
  MergeView,
  TimelineEvent,
  TimelinePage,
} from '../console-views.js';

/**
 * Asks the store's owner for one of the reads below (ConsoleReadsResponder answers): how an API process
 * that does not open the store (chDB, owned by the processor) reads it, as recommendations do.
 */
export abstract class RemoteConsoleReads {
  abstract ask<M extends ConsoleReadName>(
    method: M,
    args: Parameters<ConsoleStoreReads[M]>,
  ): Promise<Awaited<ReturnType<ConsoleStoreReads[M]>>>;
}

/**
 * The reads the store's owner answers for others, and the one write (the API's rejection counts, which an
 * API process without the store hands to its owner); nothing else is asked over the wire.
 */
export const CONSOLE_READS = [
  'merges',
  'links',
  'consentHistory',
  'timeline',
  'eventsPerMinute',
  'ingestLag',
  'totals',
  'revenueByDay',
  'rejectionsPerMinute',
  'topRejectionReasons',
  'addRejections',
] as const;
export type ConsoleReadName = (typeof CONSOLE_READS)[number];

/** Columns of an event row that are bookkeeping, not what the customer did. */
const EVENT_BOOKKEEPING = new Set(['msg_id', 'svc_id', 'identifiers', 'order']);

export interface MinuteCount {
  minute: string;
  type: string;
  count: number;
}

export interface LagMinute {
  minute: string;
  messages: number;
  p50_ms: number;
  max_ms: number;
}

export interface Totals {
  customers: number;
  events: number;
  orders: number;
  revenue: number;
}

export interface RevenueDay {
  day: string;
  orders: number;
  revenue: number;
}

/** Records refused (or fields dropped) in one minute, of one type, for one reason. */
export interface RejectionCount {
  /** The minute, as ms since the epoch. */
  minute: number;
  outcome: 'rejected' | 'dropped';
  type: string;
  reason: string;
  records: number;
}

export interface ReasonCount {
  outcome: 'rejected' | 'dropped';
  type: string;
  reason: string;
  records: number;
}

type Row = Record<string, unknown>;
const REJECTIONS = INGEST_REJECTIONS.name;

/**
 * What the console reads from the analytic store, each one aggregate or one customer's rows (never an
 * account's raw events shipped to a page). It runs where the process opened the store (the embedded
 * wiring, a ClickHouse server); an API process without the store (chDB owned by the processor) asks the
 * store's owner (RemoteConsoleReads over NATS), and answers 503 when there is neither.
 */
@Injectable()
export class ConsoleStoreReads {
  constructor(
    @Optional() private readonly store?: AnalyticStore,
    @Optional() @Inject(RemoteConsoleReads) private readonly remote?: RemoteConsoleReads,
  ) {}

  /** The merges that joined any of these customers (survivor or merged away), oldest first. */
  async merges(account: string, customers: readonly string[]): Promise<MergeView[]> {
    if (!this.store && this.remote) return this.remote.ask('merges', [account, customers]);
    const rows = await this.query<Row>(
      account,
      `SELECT loser, survivor, seq, cause, msg_id, created_at FROM {db}.identity_merges
WHERE loser IN {ids:Array(String)} OR survivor IN {ids:Array(String)} ORDER BY seq LIMIT 1000`,
      { ids: customers },
    );
    return rows.map((r) => ({
      loser: String(r.loser),
      survivor: String(r.survivor),
      seq: Number(r.seq),
      cause: (r.cause as string[]) ?? [],
      msg_id: String(r.msg_id),
      at: String(r.created_at),
    }));
  }

  /** When each identifier of these customers was first seen, and by which customer. */
  async links(account: string, customers: readonly string[]): Promise<LinkView[]> {
    if (!this.store && this.remote) return this.remote.ask('links', [account, customers]);
    const rows = await this.query<Row>(
      account,
      `SELECT kind, value, svc_id, created_at FROM {db}.identity_links
WHERE svc_id IN {ids:Array(String)} AND kind != '' ORDER BY created_at, kind, value LIMIT 1000`,
      { ids: customers },
    );
    return rows.map((r) => ({
      kind: String(r.kind),
      value: String(r.value),
      first_customer: String(r.svc_id),
      first_seen: String(r.created_at),
    }));
  }

  /** Every consent change of these customers, newest first. */
  async consentHistory(account: string, customers: readonly string[]): Promise<ConsentChangeView[]> {
    if (!this.store && this.remote) return this.remote.ask('consentHistory', [account, customers]);
    const rows = await this.query<Row>(
      account,
      `SELECT list_id, subscribed, identifier_kind, identifier_value, source, api_key, changed_at
FROM {db}.consent_history WHERE svc_id IN {ids:Array(String)} ORDER BY at DESC, changed_at DESC, version DESC LIMIT 500`,
      { ids: customers },
    );
    return rows.map((r) => ({
      list_id: String(r.list_id),
      subscribed: r.subscribed === true || r.subscribed === 1,
      identifier_kind: String(r.identifier_kind),
      identifier_value: String(r.identifier_value),
      source: String(r.source),
      api_key: String(r.api_key),
      changed_at: String(r.changed_at),
    }));
  }

  /**
   * These customers' events, newest first, `limit` at a time (keyset on ts and event id: a page costs the
   * same however far back it is). Order events carry the customer's running order total.
   */
  async timeline(
    account: string,
    customers: readonly string[],
    limit: number,
    before?: string,
  ): Promise<TimelinePage> {
    if (!this.store && this.remote) return this.remote.ask('timeline', [account, customers, limit, before]);
    const cursor = before ? decodeCursor(before) : undefined;
    const rows = await this.query<Row>(
      account,
      `SELECT * FROM {db}.events WHERE svc_id IN {ids:Array(String)}
${cursor ? 'AND (ts, event_id) < ({ts:DateTime64(3)}, {id:String})' : ''}
ORDER BY ts DESC, event_id DESC LIMIT {limit:UInt32}`,
      { ids: customers, limit: limit + 1, ...(cursor ?? {}) },
    );
    const page = rows.slice(0, limit);
    const withOrders = page.filter((r) => r.order !== null && r.order !== undefined);
    const tallies = new Map<string, number>();
    if (withOrders.length) {
      const running = await this.query<{ event_id: string; tally: number }>(
        account,
        `SELECT event_id, sum(JSONExtractFloat(assumeNotNull(order), 'total'))
  OVER (ORDER BY ts, event_id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS tally
FROM {db}.events WHERE svc_id IN {ids:Array(String)} AND order IS NOT NULL`,
        { ids: customers },
      );
      for (const r of running) tallies.set(String(r.event_id), Number(r.tally));
    }
    const events = page.map((r): TimelineEvent => {
      const data: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(r)) {
        if (v === null || v === undefined || v === '' || EVENT_BOOKKEEPING.has(k)) continue;
        if (['event_id', 'ts', 'received_at', 'type', 'action', 'channel'].includes(k)) continue;
        data[k] = v;
      }
      const event: TimelineEvent = {
        event_id: String(r.event_id),
        ts: String(r.ts),
        received_at: String(r.received_at),
        type: String(r.type),
        action: String(r.action),
        channel: String(r.channel),
        identifiers: (r.identifiers as Record<string, string>) ?? {},
        data,
      };
      if (typeof r.order === 'string') {
        event.order = JSON.parse(r.order) as Record<string, unknown>;
        const tally = tallies.get(event.event_id);
        if (tally !== undefined) event.tally = tally;
      }
      return event;
    });
    const last = page[page.length - 1];
    return {
      events,
      ...(rows.length > limit && last ? { next: encodeCursor(String(last.ts), String(last.event_id)) } : {}),
    };
  }

  /** Events the store holds per minute and type, by the time the API accepted them (202). */
  async eventsPerMinute(account: string, sinceMinutes: number): Promise<MinuteCount[]> {
    if (!this.store && this.remote) return this.remote.ask('eventsPerMinute', [account, sinceMinutes]);
    const rows = await this.query<Row>(
      account,
      `SELECT toStartOfMinute(received_at) AS minute, type, count() AS n FROM {db}.events
WHERE received_at >= now64(3) - toIntervalMinute({since:UInt32})
GROUP BY minute, type ORDER BY minute, type`,
      { since: sinceMinutes },
    );
    return rows.map((r) => ({ minute: String(r.minute), type: String(r.type), count: Number(r.n) }));
  }

  /**
   * 202 → committed to the store, per minute of acceptance: each message's, from its events. Events are
   * sharded by customer and the commit log by message: on a cluster the join is GLOBAL.
   */
  async ingestLag(account: string, sinceMinutes: number): Promise<LagMinute[]> {
    if (!this.store && this.remote) return this.remote.ask('ingestLag', [account, sinceMinutes]);
    const rows = await this.query<Row>(
      account,
      `SELECT toStartOfMinute(accepted) AS minute, count() AS messages,
  quantile(0.5)(lag) AS p50, max(lag) AS mx
FROM (
  SELECT e.msg_id, e.accepted, toUnixTimestamp64Milli(c.committed) - toUnixTimestamp64Milli(e.accepted) AS lag
  FROM (SELECT msg_id, min(received_at) AS accepted FROM {db}.events
        WHERE received_at >= now64(3) - toIntervalMinute({since:UInt32}) GROUP BY msg_id) AS e
  GLOBAL INNER JOIN (SELECT msg_id, max(at) AS committed FROM {db}.${COMMITS_TABLE}
        WHERE done = 1 AND at >= now64(3) - toIntervalMinute({since:UInt32} + 60) GROUP BY msg_id) AS c
  ON e.msg_id = c.msg_id
)
GROUP BY minute ORDER BY minute`,
      { since: sinceMinutes },
    );
    return rows.map((r) => ({
      minute: String(r.minute),
      messages: Number(r.messages),
      p50_ms: Math.max(0, Math.round(Number(r.p50))),
      max_ms: Math.max(0, Math.round(Number(r.mx))),
    }));
  }

  /** The account's customers (merged ones counted once, in their survivor), events and purchased orders. */
  async totals(account: string): Promise<Totals> {
    if (!this.store && this.remote) return this.remote.ask('totals', [account]);
    const [row] = await this.query<Row>(
      account,
      `SELECT
  (SELECT count() FROM {db}.customers FINAL WHERE merged_into IS NULL) AS customers,
  (SELECT count() FROM {db}.events) AS events,
  (SELECT count() FROM {db}.orders FINAL WHERE purchased AND NOT cancelled) AS orders,
  (SELECT sum(revenue) FROM {db}.orders FINAL WHERE purchased AND NOT cancelled) AS revenue`,
    );
    return {
      customers: Number(row?.customers ?? 0),
      events: Number(row?.events ?? 0),
      orders: Number(row?.orders ?? 0),
      revenue: Number(row?.revenue ?? 0),
    };
  }

  /** Purchased orders and their revenue per day of purchase, the last `days` days. */
  async revenueByDay(account: string, days: number): Promise<RevenueDay[]> {
    if (!this.store && this.remote) return this.remote.ask('revenueByDay', [account, days]);
    const rows = await this.query<Row>(
      account,
      `SELECT toDate(ts) AS day, count() AS n, sum(revenue) AS revenue FROM {db}.orders FINAL
WHERE purchased AND NOT cancelled AND ts >= now64(3) - toIntervalDay({days:UInt32})
GROUP BY day ORDER BY day`,
      { days },
    );
    return rows.map((r) => ({ day: String(r.day), orders: Number(r.n), revenue: Number(r.revenue) }));
  }

  /**
   * Adds one flush of the API's rejection counts (`id`: the flush's, so a flush sent again is stored once).
   * The store sums rows of one minute, outcome, type and reason as it merges them.
   */
  async addRejections(account: string, counts: readonly RejectionCount[], id: string): Promise<void> {
    if (!this.store && this.remote) return this.remote.ask('addRejections', [account, counts, id]);
    const store = this.owned();
    const rows: RejectionRow[] = counts.map((c) => ({
      minute: (c.minute / 1000).toFixed(3),
      outcome: c.outcome,
      type: c.type,
      reason: c.reason,
      records: c.records,
      msg_id: id,
    }));
    await store.addRejections(account, rows);
  }

  /** Records refused before the 202, per minute and type (the store's sums). */
  async rejectionsPerMinute(account: string, sinceMinutes: number): Promise<MinuteCount[]> {
    if (!this.store && this.remote) return this.remote.ask('rejectionsPerMinute', [account, sinceMinutes]);
    const rows = await this.query<Row>(
      account,
      `SELECT minute, type, sum(records) AS n FROM {db}.${REJECTIONS}
WHERE outcome = 'rejected' AND minute >= toStartOfMinute(now64(3) - toIntervalMinute({since:UInt32}))
GROUP BY minute, type ORDER BY minute, type`,
      { since: sinceMinutes },
    );
    return rows.map((r) => ({ minute: String(r.minute), type: String(r.type), count: Number(r.n) }));
  }

  /** The most frequent reasons records were refused or fields dropped, with how many records each. */
  async topRejectionReasons(account: string, sinceMinutes: number, limit: number): Promise<ReasonCount[]> {
    if (!this.store && this.remote)
      return this.remote.ask('topRejectionReasons', [account, sinceMinutes, limit]);
    const rows = await this.query<Row>(
      account,
      `SELECT outcome, type, reason, sum(records) AS n FROM {db}.${REJECTIONS}
WHERE minute >= toStartOfMinute(now64(3) - toIntervalMinute({since:UInt32}))
GROUP BY outcome, type, reason ORDER BY n DESC, reason LIMIT {limit:UInt32}`,
      { since: sinceMinutes, limit },
    );
    return rows.map((r) => ({
      outcome: r.outcome === 'dropped' ? 'dropped' : 'rejected',
      type: String(r.type),
      reason: String(r.reason),
      records: Number(r.n),
    }));
  }

  private async query<T>(account: string, sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    // No ensureAccount: a never-written account reads the shared empty database (costs no tables).
    return this.owned().query<T>(account, sql, params);
  }

  private owned(): AnalyticStore {
    if (!this.store) {
      throw new EngineUnavailableError(
        'store',
        'this API process does not open the analytic store (CDP_STORE=chdb belongs to the processor)',
      );
    }
    return this.store;
  }
}

function encodeCursor(ts: string, id: string): string {
  return Buffer.from(JSON.stringify([ts, id])).toString('base64url');
}

function decodeCursor(cursor: string): { ts: string; id: string } | undefined {
  try {
    const [ts, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown[];
    if (typeof ts === 'string' && typeof id === 'string') return { ts, id };
  } catch {
    // an unreadable cursor starts from the newest
  }
  return undefined;
}
