import { AnalyticStore } from '@cdp/store';
import { CHANGED_PRODUCTS_SQL, LATEST_GENERATION_SQL } from './recommendation.query.js';
import { inline } from './recommendation-tables.js';

/** How often a request has an account's newest finished refresh generation looked up (in the background). */
export const GENERATION_CHECK_MS = 500;
/** Past this many changed products, everything the account's requests share is read again. */
const MANY_CHANGES = 20_000;

/** What a finished generation changed: these products, or (`all`) anything. */
export type Changes = { all: true } | { all: false; products: string[] };

interface AccountState {
  gen: number;
  /** Bumped whenever a change is announced: what was read before it must not be kept after it. */
  epoch: number;
  checkedAt: number;
  checking: Promise<void> | undefined;
}

/**
 * Follows each account's finished refresh generations (`rec_generations`) so that what every request
 * of an account shares — related products, product records, best sellers — is kept in memory until a
 * generation changes it, rather than read again on every request. A request never waits for a look-up
 * except the account's first; the newest generation is looked up in the background at most every
 * GENERATION_CHECK_MS, and what it changed is announced to `onChange`.
 */
export class RefreshGenerations {
  private readonly accounts = new Map<string, AccountState>();

  constructor(
    private readonly store: AnalyticStore,
    private readonly onChange: (account: string, changes: Changes) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** The account's newest finished generation known here, and its epoch (see AccountState). */
  async current(account: string): Promise<{ gen: number; epoch: number }> {
    let state = this.accounts.get(account);
    if (!state) {
      state = { gen: 0, epoch: 0, checkedAt: 0, checking: undefined };
      this.accounts.set(account, state);
      await this.check(account, state);
    } else if (!state.checking && this.now() - state.checkedAt >= GENERATION_CHECK_MS) {
      void this.check(account, state);
    }
    return { gen: state.gen, epoch: state.epoch };
  }

  /** The epoch now: a read started at an older epoch is not kept. */
  epoch(account: string): number {
    return this.accounts.get(account)?.epoch ?? 0;
  }

  private check(account: string, state: AccountState): Promise<void> {
    state.checking ??= (async () => {
      try {
        const [row] = await this.store.query<{ gen: number }>(account, LATEST_GENERATION_SQL);
        const latest = Number(row?.gen ?? 0);
        if (latest > state.gen) {
          const after = state.gen;
          state.epoch++; // reads in flight from here on are not kept
          this.onChange(account, await this.changes(account, after, latest));
          state.gen = latest;
          state.epoch++; // nor reads made while the changes were looked up
        }
        state.checkedAt = this.now();
      } catch {
        // The store is busy or down: everything is read again, and the next request looks again.
        state.epoch++;
        this.onChange(account, { all: true });
      } finally {
        state.checking = undefined;
      }
    })();
    return state.checking;
  }

  private async changes(account: string, after: number, upto: number): Promise<Changes> {
    if (after === 0) return { all: true };
    const rows = await this.store.query<{ product_id: string }>(
      account,
      inline(CHANGED_PRODUCTS_SQL, { after, upto }),
    );
    if (rows.length > MANY_CHANGES) return { all: true };
    return { all: false, products: [...new Set(rows.map((r) => r.product_id))] };
  }
}
