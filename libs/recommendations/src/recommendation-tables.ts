import { AnalyticStore } from '@cdp/store';
import { REC_TABLES } from './recommendations.sql.js';

/** Creates an account's recommendation tables once per process (idempotent DDL, the store's layout). */
export class RecommendationTables {
  private readonly ready = new Map<string, Promise<void>>();

  constructor(private readonly store: AnalyticStore) {}

  ensure(account: string): Promise<void> {
    let done = this.ready.get(account);
    if (!done) {
      done = this.store.ensureTables(account, REC_TABLES);
      done.catch(() => this.ready.delete(account));
      this.ready.set(account, done);
    }
    return done;
  }
}

/** Puts whole numbers in place of `{name:Type}` parameters, for statements run without binding. */
export function inline(sql: string, values: Record<string, number>): string {
  return sql.replace(/\{(\w+):\w+\}/g, (whole, name: string) => {
    const value = values[name];
    if (value === undefined) return whole;
    if (!Number.isSafeInteger(value)) throw new Error(`${name} must be a whole number`);
    return String(value);
  });
}
