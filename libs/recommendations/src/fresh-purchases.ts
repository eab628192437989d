import { LATE_COMMITS_MS } from './recommendations.sql.js';

/** Past this many purchases held, the oldest customers' are let go (a finished refresh has them by then). */
const MAX_HELD = 200_000;

/**
 * Purchases stored that no finished refresh generation may have taken in yet, per account and customer,
 * with when they were noted. Each is held until a generation that surely took it in has finished: one
 * started more than LATE_COMMITS_MS after it was noted (a message committed at t is taken by the first
 * generation started after t, refreshers' clocks allowing), by which time the customer's refreshed
 * history has it. Holding one longer than needed changes nothing (a bought product is left out either
 * way), so this errs on the long side; it holds about a minute of an account's purchases.
 */
export class FreshPurchases {
  /** `account/customer` → product → when noted, oldest customers first. */
  private readonly held = new Map<string, Map<string, number>>();
  private count = 0;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly max = MAX_HELD,
  ) {}

  add(account: string, customer: string, product: string): void {
    const key = `${account}/${customer}`;
    let products = this.held.get(key);
    if (!products) this.held.set(key, (products = new Map<string, number>()));
    if (!products.has(product)) this.count++;
    products.set(product, this.now());
    while (this.count > this.max) {
      const [oldest, dropped] = this.held.entries().next().value!;
      this.held.delete(oldest);
      this.count -= dropped.size;
    }
  }

  /** What these customers (one customer and whoever was merged into them) bought lately. */
  of(account: string, customers: readonly string[]): string[] {
    const out: string[] = [];
    for (const customer of customers) {
      const products = this.held.get(`${account}/${customer}`);
      if (products) out.push(...products.keys());
    }
    return out;
  }

  /** Lets go of what the finished generation `gen` (its start, in ms) took in. */
  settle(account: string, gen: number): void {
    const prefix = `${account}/`;
    for (const [key, products] of this.held) {
      if (!key.startsWith(prefix)) continue;
      for (const [product, at] of products) {
        if (at + LATE_COMMITS_MS >= gen) continue;
        products.delete(product);
        this.count--;
      }
      if (products.size === 0) this.held.delete(key);
    }
  }
}
