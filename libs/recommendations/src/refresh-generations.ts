import { AnalyticStore } from '@cdp/store';
import { CHANGES_SQL, FRESH_PURCHASES_SQL, LATEST_GENERATION_SQL } from './recommendation.query.js';
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

/** Purchases no finished generation took in yet: customer → products. */
export type FreshPurchases = ReadonlyMap<string, readonly string[]>;

interface AccountState {
  gen: number;
  /** Bumped whenever a change is announced: what was read before it must not be kept after it. */
  epoch: number;
  fresh: FreshPurchases;
  checkedAt: number;
  checking: Promise<void> | undefined;
}

/**
 * Follows each account's finished refresh generations (`rec_generations`) so that what requests read —
 * related products, product records, best sellers, customers' histories — is kept in memory until a
 * generation changes it, rather than read again on every request; and keeps the purchases stored since
 * that no generation took in yet, so that those are left out before the next refresh. A request never
 * waits for a look-up except the account's first; both are looked up in the background at most every
 * GENERATION_CHECK_MS, and what a generation changed is announced to `onChange`.
 */
export class RefreshGenerations {
  private readonly accounts = new Map<string, AccountState>();

  constructor(
    private readonly store: AnalyticStore,
    private readonly onChange: (account: string, changes: Changes) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** The account's newest finished generation known here, its epoch (see AccountState) and fresh purchases. */
  async current(account: string): Promise<{ gen: number; epoch: number; fresh: FreshPurchases }> {
    let state = this.accounts.get(account);
    if (!state) {
      state = { gen: 0, epoch: 0, fresh: new Map(), checkedAt: 0, checking: undefined };
      this.accounts.set(account, state);
      await this.check(account, state);
    } else if (!state.checking && this.now() - state.checkedAt >= GENERATION_CHECK_MS) {
      void this.check(account, state);
    }
    return { gen: state.gen, epoch: state.epoch, fresh: state.fresh };
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
        // Until now the purchases the new generation took in were still fresh ones: none is missed.
        state.fresh = await this.freshPurchases(account, state.gen);
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

  private async freshPurchases(account: string, gen: number): Promise<FreshPurchases> {
    const rows = await this.store.query<{ svc_id: string; product_id: string }>(
      account,
      inline(FRESH_PURCHASES_SQL, { since: Math.max(0, gen - LATE_COMMITS_MS), gen }),
    );
    const fresh = new Map<string, string[]>();
    for (const { svc_id, product_id } of rows) {
      const list = fresh.get(svc_id);
      if (list) list.push(product_id);
      else fresh.set(svc_id, [product_id]);
    }
    return fresh;
  }
}
