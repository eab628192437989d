import type { AnalyticStore } from '@cdp/store';
import { SegmentEventCounts, type EventCountRequest } from './event-counts.port.js';

const DAY_MS = 86_400_000;

/**
 * Counts from the store's events table in one query: a `countIf` per condition over the customer's
 * rows (sorted by svc_id and ts, so the read is the customer's own granules) since the widest window.
 */
export class StoreSegmentEventCounts extends SegmentEventCounts {
  constructor(private readonly store: AnalyticStore) {
    super();
  }

  async count({ account, customers, conditions, now }: EventCountRequest): Promise<number[]> {
    if (conditions.length === 0 || customers.length === 0) return conditions.map(() => 0);
    const params: Record<string, unknown> = { ids: customers };
    const counts = conditions.map((c, i) => {
      params[`t${i}`] = c.type;
      params[`s${i}`] = now - c.within_days * DAY_MS;
      let test = `type = {t${i}:String} AND ts >= fromUnixTimestamp64Milli({s${i}:Int64})`;
      if (c.action !== undefined) {
        params[`a${i}`] = c.action;
        test += ` AND action = {a${i}:String}`;
      }
      return `countIf(${test}) AS c${i}`;
    });
    params.from = now - Math.max(...conditions.map((c) => c.within_days)) * DAY_MS;
    const sql =
      `SELECT ${counts.join(', ')} FROM {db}.events ` +
      'WHERE svc_id IN {ids:Array(String)} AND ts >= fromUnixTimestamp64Milli({from:Int64})';
    const [row] = await this.store.query<Record<string, number | string>>(account, sql, params);
    return conditions.map((_, i) => Number(row?.[`c${i}`] ?? 0));
  }
}
