import { ORDER_TOTAL_SUM } from '@cdp/exports';
import type { AnalyticStore } from '@cdp/store';
import { SegmentEventCounts, type EventCountRequest } from './event-counts.port.js';
import type { EventCondition, EventTally } from './segment.js';

const DAY_MS = 86_400_000;
/** Customers one coalesced query reads at most (its `IN` list stays small); more wait for the next. */
const MAX_BATCH_CUSTOMERS = 512;

interface CountRow {
  svc_id: string;
  type: string;
  action: string;
  age: number | string;
  n: number | string;
  total: number | string;
}

interface Waiting {
  request: EventCountRequest;
  resolve(tallies: EventTally[]): void;
  reject(err: unknown): void;
}

/**
 * Counts from the store's events table in one small query: the customers' events of the types asked,
 * since the widest window, counted by customer, type, action and age in whole days (the table is sorted
 * by svc_id and ts, so this reads the customers' own granules); each condition then sums the days its
 * window covers. A `countIf` per condition said the same but cost the engine ~4 ms a condition to plan.
 *
 * Lookups that arrive while an account's query runs wait for it to end and then go together in the next
 * query (never delayed otherwise): the store answers one statement at a time per session, so under load
 * a queue of single-customer statements is what made the lookup's p99 (docs/benchmarks.md "Segments").
 * The counts are the same as asked one by one; the windows end when the query runs.
 */
export class StoreSegmentEventCounts extends SegmentEventCounts {
  /** Whether concurrent lookups share a query (off: one query each; the benchmark compares both). */
  coalescing = true;
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly running = new Set<string>();

  constructor(private readonly store: AnalyticStore) {
    super();
  }

  count(request: EventCountRequest): Promise<EventTally[]> {
    const { conditions, customers } = request;
    if (conditions.length === 0 || customers.length === 0)
      return Promise.resolve(conditions.map(() => ({ count: 0, total: 0 })));
    if (!this.coalescing) return this.countTogether([request]).then(([tallies]) => tallies!);
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(request.account) ?? [];
      queue.push({ request, resolve, reject });
      this.waiting.set(request.account, queue);
      if (!this.running.has(request.account)) void this.drain(request.account);
    });
  }

  /** Runs the account's waiting lookups, a batch per query, until none waits. */
  private async drain(account: string): Promise<void> {
    this.running.add(account);
    try {
      for (;;) {
        const queue = this.waiting.get(account) ?? [];
        if (queue.length === 0) break;
        const batch: Waiting[] = [];
        let ids = 0;
        while (
          queue.length &&
          (batch.length === 0 || ids + queue[0]!.request.customers.length <= MAX_BATCH_CUSTOMERS)
        ) {
          const next = queue.shift()!;
          ids += next.request.customers.length;
          batch.push(next);
        }
        try {
          const tallies = await this.countTogether(batch.map((w) => w.request));
          batch.forEach((w, i) => w.resolve(tallies[i]!));
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.waiting.delete(account);
      this.running.delete(account);
    }
  }

  /** One query for every request of a batch (one account); each request's tallies from its customers' rows. */
  private async countTogether(requests: EventCountRequest[]): Promise<EventTally[][]> {
    const account = requests[0]!.account;
    const now = Math.max(...requests.map((r) => r.now));
    const conditions = requests.flatMap((r) => r.conditions);
    const widest = Math.max(...conditions.map((c) => c.within_days));
    // Order totals are read only when a condition bounds them: the JSON is the costly part of the row.
    const totals = conditions.some((c) => c.min_total !== undefined || c.max_total !== undefined);
    const rows = await this.store.query<CountRow>(
      account,
      'SELECT svc_id, type, action, intDiv({now:Int64} - toUnixTimestamp64Milli(ts), 86400000) AS age, ' +
        `count() AS n, ${totals ? `toString(${ORDER_TOTAL_SUM})` : "'0'"} AS total ` +
        'FROM {db}.events WHERE svc_id IN {ids:Array(String)} AND type IN {types:Array(String)} ' +
        'AND ts >= fromUnixTimestamp64Milli({from:Int64}) GROUP BY svc_id, type, action, age',
      {
        ids: [...new Set(requests.flatMap((r) => r.customers))],
        types: [...new Set(conditions.map((c) => c.type))],
        now,
        from: now - widest * DAY_MS,
      },
    );
    return requests.map((r) => {
      const own = new Set(r.customers);
      return r.conditions.map((c) => tally(c, rows, own));
    });
  }
}

/**
 * An event `age` whole days old is within a window of `within_days` when age < within_days (to the day:
 * the window's last millisecond aside); an event stamped ahead of now (a client's clock) counts. Totals
 * are summed in the store's exact 1/10000 units, so the total is the decimal the SQL compares.
 */
function tally(c: EventCondition, rows: readonly CountRow[], customers: ReadonlySet<string>): EventTally {
  let count = 0;
  let units = 0;
  for (const r of rows) {
    if (!customers.has(r.svc_id) || r.type !== c.type || Number(r.age) >= c.within_days) continue;
    if (c.action !== undefined && r.action !== c.action) continue;
    count += Number(r.n);
    units += Math.round(Number(r.total) * 1e4);
  }
  return { count, total: units / 1e4 };
}
