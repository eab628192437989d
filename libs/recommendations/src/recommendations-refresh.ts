import { AnalyticStore } from '@cdp/store';
import { inline, RecommendationTables } from './recommendation-tables.js';
import {
  DERIVE_GENERATION,
  GENERATION_SIZE,
  LATE_COMMITS_MS,
  TAKE_MESSAGES,
  UNFINISHED_GENERATIONS,
  WATERMARKS,
} from './recommendations.sql.js';

/**
 * Brings an account's recommendation tables up to date with its committed messages, incrementally: the
 * messages committed since the last refresh become a generation, and only their rows are derived
 * (interactions, affinity pairs with the customer's earlier interactions, popularity, sales). Each
 * derived insert carries a deduplication token of its generation, so one cut short by a crash is run
 * again at the next refresh without counting anything twice.
 */
export class RecommendationsRefresh {
  /** The newest commit each account had at its last refresh: nothing newer, nothing to do. */
  private readonly committed = new Map<string, number>();

  constructor(
    private readonly store: AnalyticStore,
    private readonly tables = new RecommendationTables(store),
    private readonly now: () => number = Date.now,
  ) {}

  /** Refreshes the account; returns how many messages it took in (0: it was up to date). */
  async refresh(account: string): Promise<number> {
    await this.tables.ensure(account);
    for (const { gen } of await this.store.query<{ gen: number }>(account, UNFINISHED_GENERATIONS)) {
      await this.derive(account, Number(gen));
    }
    const [marks] = await this.store.query<{ seen_ms: number; committed_ms: number; last_gen: number }>(
      account,
      WATERMARKS,
    );
    const committed = Number(marks?.committed_ms ?? 0);
    if (committed === 0 || this.committed.get(account) === committed) return 0;
    const gen = Math.max(this.now(), Number(marks?.last_gen ?? 0) + 1);
    const since = Math.max(0, Number(marks?.seen_ms ?? 0) - LATE_COMMITS_MS);
    await this.store.execute(account, inline(TAKE_MESSAGES, { gen, since }));
    const [size] = await this.store.query<{ n: number }>(account, inline(GENERATION_SIZE, { gen }));
    const taken = Number(size?.n ?? 0);
    if (taken > 0) await this.derive(account, gen);
    this.committed.set(account, committed);
    return taken;
  }

  private async derive(account: string, gen: number): Promise<void> {
    for (const step of DERIVE_GENERATION) {
      const sql = inline(step.sql, { gen });
      await this.store.execute(
        account,
        sql.replace(
          /^INSERT INTO (\S+) \(([^)]*)\)/,
          `INSERT INTO $1 ($2) SETTINGS insert_deduplication_token = 'rec-${gen}-${step.name}'`,
        ),
      );
    }
  }
}
