import type { AnalyticStore } from '@cdp/store';
import { SegmentEventCounts, type EventCountRequest, type StoredEvent } from './event-counts.port.js';
import { EventDigests, type DigestEntry, type DigestScope } from './event-digests.js';
import type { EventTally } from './segment.js';

/** How long an account's digests are used before they are built again from the store (in the background). */
export const DIGEST_REFRESH_MS = 3_600_000;

interface DigestRow {
  svc_id: string;
  event_id: string;
  type: string;
  action: string;
  ts: number | string;
  total: string;
}

/**
 * Segment event counts from per-customer digests of the stored events (EventDigests), kept by the
 * process that writes the store: a lookup counts in memory, not in the store. Used only where this
 * process is the store's one writer (chDB: the embedded process, or the processor the API asks over
 * NATS), since only the writer sees every event as it is stored.
 *
 * An account's first lookup (after a restart, or after a segment names a new event type or a wider
 * window) is answered by the store query while the account's digests are built from the store, once
 * for all its customers; from then on the processor adds each event as its write commits. A failed
 * write drops the account's digests (it may have stored part of its events); they are built again from
 * the store, as they are every DIGEST_REFRESH_MS, which also bounds what they could miss of the store's
 * own deletions (retention, an event table's redaction).
 */
export class DigestedSegmentEventCounts extends SegmentEventCounts {
  readonly digests: EventDigests;
  /** Whether lookups read the digests (the benchmark turns it off to compare with the store query). */
  digesting = true;
  private readonly builds = new Map<string, Promise<void>>();

  constructor(
    private readonly store: AnalyticStore,
    private readonly fallback: SegmentEventCounts,
    private readonly onError: (err: unknown) => void,
    bounds: { perAccount?: number; total?: number } = {},
    private readonly now: () => number = Date.now,
  ) {
    super();
    this.digests = new EventDigests(bounds.perAccount, bounds.total);
  }

  count(request: EventCountRequest): Promise<EventTally[]> {
    const { account, conditions, customers, now } = request;
    if (!this.digesting || conditions.length === 0) return this.fallback.count(request);
    const digests = this.digests.usable(account, conditions, now);
    const builtAt = this.digests.builtAt(account);
    if (!digests || (builtAt !== undefined && this.now() - builtAt > DIGEST_REFRESH_MS))
      void this.startBuild(account, this.digests.scopeFor(account, conditions, now));
    if (!digests) return this.fallback.count(request);
    return Promise.resolve(this.digests.tallies(digests, customers, conditions, now));
  }

  override stored(account: string, events: readonly StoredEvent[]): void {
    this.digests.stored(account, events.map(entryOf), this.now());
  }

  override uncertain(account: string): void {
    this.digests.uncertain(account);
  }

  /** Builds the account's digests in the background; a build under way is the one returned. */
  startBuild(account: string, scope: DigestScope): Promise<void> {
    const running = this.builds.get(account);
    if (running) return running;
    const build = this.digests
      .build(account, scope, () => this.load(account, scope), this.now())
      .catch((err: unknown) => {
        this.digests.uncertain(account);
        this.onError(err);
      })
      .finally(() => this.builds.delete(account));
    this.builds.set(account, build);
    return build;
  }

  /** The account's events in scope: one row each (the table is sorted by svc_id and ts). */
  private async load(account: string, scope: DigestScope): Promise<[string, string, DigestEntry][]> {
    const rows = await this.store.query<DigestRow>(
      account,
      'SELECT svc_id, event_id, type, action, toUnixTimestamp64Milli(ts) AS ts, ' +
        "toString(toDecimal128OrZero(JSONExtractRaw(ifNull(`order`, ''), 'total'), 4)) AS total " +
        'FROM {db}.events WHERE type IN {types:Array(String)} AND ts >= fromUnixTimestamp64Milli({from:Int64})',
      { types: [...scope.types], from: scope.from },
    );
    return rows.map((r) => [
      r.svc_id,
      r.event_id,
      { type: r.type, action: r.action, ts: Number(r.ts), units: unitsOf(r.total) },
    ]);
  }
}

/** A stored row as its digest entry: its time and its order's total read as the store reads them. */
function entryOf(e: StoredEvent): [string, string, DigestEntry] {
  return [
    e.svc_id,
    e.event_id,
    { type: e.type, action: e.action, ts: storeTimeMs(e.ts), units: orderTotalUnits(e.order) },
  ];
}

/** The store's time text: epoch seconds with milliseconds, or `YYYY-MM-DD hh:mm:ss.mmm` (UTC). */
export function storeTimeMs(ts: string): number {
  return /^-?\d+(\.\d+)?$/.test(ts) ? Math.round(Number(ts) * 1000) : Date.parse(`${ts.replace(' ', 'T')}Z`);
}

/**
 * The order's `total` as `toDecimal128OrZero(JSONExtractRaw(order, 'total'), 4)` reads it: a JSON number
 * to 4 decimals (further digits cut), anything else (a string, absent, no order) 0.
 */
export function orderTotalUnits(order: string | null | undefined): number {
  if (!order) return 0;
  let total: unknown;
  try {
    total = (JSON.parse(order) as { total?: unknown }).total;
  } catch {
    return 0;
  }
  return typeof total === 'number' && Number.isFinite(total) ? unitsOf(String(total)) : 0;
}

/** A decimal text in exact 1/10000 units, digits past the fourth cut. */
function unitsOf(text: string): number {
  const m = /^(-?)(\d+)(?:\.(\d*))?$/.exec(text);
  if (!m) return 0;
  const units = Number(m[2]) * 1e4 + Number(((m[3] ?? '') + '0000').slice(0, 4));
  return m[1] ? -units : units;
}
