import { AnalyticStore } from '@cdp/store';
import { inline, RecommendationTables } from './recommendation-tables.js';
import {
  COMMIT_ROWS,
  DERIVE_GENERATION,
  GENERATION_SIZE,
  LAST_GENERATION,
  LATE_COMMITS_MS,
  RELATED_MISSING,
  RELATED_OF_ALL,
  SEEN_COMMITS,
  SEEN_IN_GENERATION,
  TAKE_MESSAGES,
  UNFINISHED_GENERATIONS,
} from './recommendations.sql.js';

/** What this process knows of an account's refresh since it took the refresher's lease. */
interface Progress {
  /** Rows of the commit log at the last refresh: unchanged, nothing to do. */
  commitRows: number;
  /** The newest commit the generations took in. */
  seenMs: number;
}

/**
 * Brings an account's recommendation tables up to date with its committed messages, incrementally: the
 * messages committed since the last refresh become a generation, and only their rows are derived
 * (interactions, affinity pairs with the customer's earlier interactions, popularity, sales, and the
 * related lists of the products they touched). Each derived insert carries a deduplication token of
 * its generation, so one cut short by a crash is run again at the next refresh without counting
 * anything twice.
 *
 * An account with nothing new costs one statement answered from table metadata (COMMIT_ROWS): the
 * refresh runs every second, on the store requests read from too. What a full read would cost (the
 * unfinished generations, the newest commit seen) is looked at once per account after `restart()`.
 */
export class RecommendationsRefresh {
  private readonly progress = new Map<string, Progress>();

  constructor(
    private readonly store: AnalyticStore,
    private readonly tables = new RecommendationTables(store),
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Forgets what this process knew: another refresher may have run meanwhile (the lease moved), or
   * left a generation unfinished.
   */
  restart(): void {
    this.progress.clear();
  }

  /** Refreshes the account; returns how many messages it took in (0: it was up to date). */
  async refresh(account: string): Promise<number> {
    await this.tables.ensure(account);
    const [count] = await this.store.query<{ n: number }>(account, COMMIT_ROWS);
    const commitRows = Number(count?.n ?? 0);
    let progress = this.progress.get(account);
    if (progress?.commitRows === commitRows) return 0;
    try {
      progress ??= await this.resume(account);
      const [last] = await this.store.query<{ gen: number }>(account, LAST_GENERATION);
      const gen = Math.max(this.now(), Number(last?.gen ?? 0) + 1);
      const since = Math.max(0, progress.seenMs - LATE_COMMITS_MS);
      await this.store.execute(account, inline(TAKE_MESSAGES, { gen, since }));
      const [size] = await this.store.query<{ n: number }>(account, inline(GENERATION_SIZE, { gen }));
      const taken = Number(size?.n ?? 0);
      if (taken > 0) {
        await this.derive(account, gen);
        const [seen] = await this.store.query<{ seen_ms: number }>(
          account,
          inline(SEEN_IN_GENERATION, { gen }),
        );
        progress.seenMs = Math.max(progress.seenMs, Number(seen?.seen_ms ?? 0));
      }
      progress.commitRows = commitRows;
      this.progress.set(account, progress);
      return taken;
    } catch (err) {
      // Whatever was cut short is found again as unfinished.
      this.progress.delete(account);
      throw err;
    }
  }

  /** Finishes what a crashed refresher left, and reads how far the generations got. */
  private async resume(account: string): Promise<Progress> {
    for (const { gen } of await this.store.query<{ gen: number }>(account, UNFINISHED_GENERATIONS)) {
      await this.derive(account, Number(gen));
    }
    const [missing] = await this.store.query<{ missing: number; gen: number }>(account, RELATED_MISSING);
    if (Number(missing?.missing ?? 0) === 1) {
      const gen = Number(missing?.gen ?? 0);
      await this.insert(account, inline(RELATED_OF_ALL, { gen }), `rec-${gen}-related-all`);
    }
    const [seen] = await this.store.query<{ seen_ms: number }>(account, SEEN_COMMITS);
    return { commitRows: -1, seenMs: Number(seen?.seen_ms ?? 0) };
  }

  private async derive(account: string, gen: number): Promise<void> {
    for (const step of DERIVE_GENERATION) {
      await this.insert(account, inline(step.sql, { gen }), `rec-${gen}-${step.name}`);
    }
  }

  /**
   * A derived insert, deduplicated by its token. On a cluster it is a synchronous Distributed insert
   * (`insert_distributed_sync`, no effect on one node): when it returns, the rows are in their shards'
   * replicated tables, which remember the token, as the store's own inserts are.
   */
  private insert(account: string, sql: string, token: string): Promise<void> {
    return this.store.execute(
      account,
      sql.replace(
        /^INSERT INTO (\S+) \(([^)]*)\)/,
        `INSERT INTO $1 ($2) SETTINGS insert_deduplication_token = '${token}', insert_distributed_sync = 1`,
      ),
    );
  }
}
