import { AnalyticStore } from '@cdp/store';
import { CHANGES_SQL, FRESH_PURCHASES_SQL, LATEST_GENERATION_SQL } from './recommendation.query.js';
import type { FreshPurchases } from './fresh-purchases.js';
import { inline } from './recommendation-tables.js';
import { LATE_COMMITS_MS } from './recommendations.sql.js';

/** How often a request has an account's newest finished refresh generation looked up (in the background). */
export const GENERATION_CHECK_MS = 500;
/** Past this many changed products or customers, everything kept for the account is read again. */
const MANY_CHANGES = 20_000;

/**
 * What finished generations changed: these products and customers (`merged`: some customer was
 * merged into another, so whose history is whose may have changed for anyone), or (`all`) anything.
 */
export type Changes =
  { all: true } | { all: false; products: string[]; customers: string[]; merged: boolean };

interface AccountState {
  gen: number;
  /** Bumped whenever a change is announced: what was read before it must not be kept after it. */
  epoch: number;
  /** The account's first look-up: every request waits for it. */
  ready: Promise<void>;
  checkedAt: number;
  checking: Promise<void> | undefined;
}

/**
 * Follows each account's finished refresh generations (`rec_generations`) so that what requests read —
 * related products, product records, best sellers, customers' histories — is kept in memory until a
 * generation changes it, rather than read again on every request. A request never waits for a look-up
 * except the account's first; the newest generation is looked up in the background at most every
 * GENERATION_CHECK_MS, and what a generation changed is announced to `onChange`, then the fresh
 * purchases it took in are let go. The account's first look-up also reads the purchases stored before
 * this process listened to the purchase notices that no generation took in yet (once: later ones are
 * noticed).
 */
export class RefreshGenerations {
  private readonly accounts = new Map<string, AccountState>();

  constructor(
    private readonly store: AnalyticStore,
    private readonly fresh: FreshPurchases,
    private readonly onChange: (account: string, changes: Changes) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** The account's newest finished generation known here and its epoch (see AccountState). */
  async current(account: string): Promise<{ gen: number; epoch: number }> {
    let state = this.accounts.get(account);
    if (!state) {
      const created: AccountState = {
        gen: 0,
        epoch: 0,
        ready: Promise.resolve(),
        checkedAt: 0,
        checking: undefined,
      };
      created.ready = this.check(account, created).then(() => this.readFreshPurchases(account, created.gen));
      created.ready.catch(() => this.accounts.get(account) === created && this.accounts.delete(account));
      this.accounts.set(account, (state = created));
    } else if (!state.checking && this.now() - state.checkedAt >= GENERATION_CHECK_MS) {
      void this.check(account, state);
    }
    await state.ready;
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
          // Only now that the histories it changed are dropped: a history kept from before has them.
          this.fresh.settle(account, latest);
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
    const rows = await this.store.query<{ what: string; id: string }>(
      account,
      inline(CHANGES_SQL, { after, upto }),
    );
    const products = new Set<string>();
    const customers = new Set<string>();
    let merged = false;
    for (const { what, id } of rows) {
      if (what === 'product') products.add(id);
      else if (what === 'customer') customers.add(id);
      else merged = true;
    }
    if (products.size > MANY_CHANGES || customers.size > MANY_CHANGES) return { all: true };
    return { all: false, products: [...products], customers: [...customers], merged };
  }

  /** The purchases stored before this process listened that no generation up to `gen` took in. */
  private async readFreshPurchases(account: string, gen: number): Promise<void> {
    const rows = await this.store.query<{ svc_id: string; product_id: string }>(
      account,
      inline(FRESH_PURCHASES_SQL, { since: Math.max(0, gen - LATE_COMMITS_MS), gen }),
    );
    for (const { svc_id, product_id } of rows) this.fresh.add(account, svc_id, product_id);
  }
}
