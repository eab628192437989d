import { LRUCache } from 'lru-cache';
import { AnalyticStore } from '@cdp/store';
import { rank, relatedScores, type Pair } from './ranking.js';
import {
  BEST_SELLERS_SQL,
  CUSTOMER_SQL,
  PAIRS_SQL,
  POPULARITY_SQL,
  productsSql,
  rulesFilter,
} from './recommendation.query.js';
import { RecommendationTables } from './recommendation-tables.js';
import {
  Recommender,
  type RecommendationRequest,
  type RecommendedProduct,
  type RecommendationType,
} from './recommender.port.js';

/** How long the product table's columns are used before they are read again (custom fields come and go). */
const COLUMNS_TTL_MS = 5_000;
/** How long an account's best sellers (a week's window, refreshed every second) are reused. */
const BEST_SELLERS_TTL_MS = 2_000;

/**
 * Recommendations from the store this process holds. A request reads precomputed rows only — the
 * customer's seeds and recent purchases, the affinities of a few dozen products, the best sellers —
 * ranks a few hundred candidates here, and reads the records of the best ones that pass the rules.
 */
export class StoreRecommender extends Recommender {
  private readonly columns: LRUCache<string, Set<string>>;
  private readonly bestSellers: LRUCache<string, string[]>;

  constructor(
    private readonly store: AnalyticStore,
    private readonly tables = new RecommendationTables(store),
  ) {
    super();
    this.columns = new LRUCache<string, Set<string>>({
      max: 10_000,
      ttl: COLUMNS_TTL_MS,
      fetchMethod: async (account) =>
        new Set(
          (await this.store.query<{ name: string }>(account, 'DESCRIBE TABLE {db}.products')).map(
            (c) => c.name,
          ),
        ),
    });
    this.bestSellers = new LRUCache<string, string[]>({
      max: 10_000,
      ttl: BEST_SELLERS_TTL_MS,
      fetchMethod: async (account) =>
        (await this.store.query<{ product_id: string }>(account, BEST_SELLERS_SQL)).map((r) => r.product_id),
    });
  }

  async recommend(request: RecommendationRequest): Promise<RecommendedProduct[]> {
    const { account } = request;
    await this.tables.ensure(account);
    const [history, best, columns] = await Promise.all([
      this.history(account, request.customer),
      this.bestSellers.fetch(account),
      this.columns.fetch(account),
    ]);
    const { personal, contextual } = await this.related(account, history.seeds, request.productIds);
    const tiers: [RecommendationType, string[]][] = [
      ['contextual', contextual],
      ['personal', personal],
      ['best_sellers', best ?? []],
    ];
    const ranked = rank(tiers, new Set([...history.bought, ...request.productIds]));
    if (ranked.length === 0) return [];
    const filter = rulesFilter(request.rules, columns ?? new Set());
    const rows = await this.store.query<Record<string, unknown> & { product_id: string }>(
      account,
      productsSql(filter.sql),
      { ...filter.params, candidates: ranked.map((r) => r.product_id) },
    );
    const records = new Map(rows.map((r) => [r.product_id, r]));
    const top: RecommendedProduct[] = [];
    for (const { product_id, type } of ranked) {
      const record = records.get(product_id);
      if (!record) continue; // no product record, or left out by the rules
      top.push({ ...record, recommendation_type: type });
      if (top.length === request.limit) break;
    }
    return order(top, request);
  }

  /** The customer's seeds (product → weight, the strongest 1) and purchases of the last 180 days. */
  private async history(
    account: string,
    customer: string | undefined,
  ): Promise<{ seeds: Map<string, number>; bought: string[] }> {
    const seeds = new Map<string, number>();
    const bought: string[] = [];
    if (customer === undefined) return { seeds, bought };
    const rows = await this.store.query<{ kind: string; product_id: string; weight: number }>(
      account,
      CUSTOMER_SQL,
      { customer },
    );
    const strongest = Math.max(0, ...rows.filter((r) => r.kind === 'seed').map((r) => Number(r.weight)));
    for (const r of rows) {
      if (r.kind === 'bought') bought.push(r.product_id);
      else if (strongest > 0) seeds.set(r.product_id, Number(r.weight) / strongest);
    }
    return { seeds, bought };
  }

  /** Products related to the customer's seeds and to the page's products, best first. */
  private async related(
    account: string,
    seeds: ReadonlyMap<string, number>,
    context: readonly string[],
  ): Promise<{ personal: string[]; contextual: string[] }> {
    const sources = [...new Set([...seeds.keys(), ...context])];
    if (sources.length === 0) return { personal: [], contextual: [] };
    const pairs = (await this.store.query<Pair>(account, PAIRS_SQL, { sources })).map((p) => ({
      ...p,
      score: Number(p.score),
    }));
    if (pairs.length === 0) return { personal: [], contextual: [] };
    const ids = [...new Set([...sources, ...pairs.map((p) => p.related)])];
    const popularity = new Map(
      (await this.store.query<{ product_id: string; pop: number }>(account, POPULARITY_SQL, { ids })).map(
        (r) => [r.product_id, Number(r.pop)],
      ),
    );
    return {
      personal: relatedScores(pairs, seeds, popularity),
      contextual: relatedScores(pairs, new Map(context.map((id) => [id, 1])), popularity),
    };
  }
}

/**
 * The top `limit` products (already cut by rank) in the order asked: by rank (best first for `desc`), or
 * by a product field, nulls last either way.
 */
export function order(ranked: RecommendedProduct[], request: RecommendationRequest): RecommendedProduct[] {
  const { sort, order: direction } = request;
  if (sort === undefined) return direction === 'asc' ? [...ranked].reverse() : ranked;
  const sign = direction === 'asc' ? 1 : -1;
  return ranked
    .map((product, rank) => ({ product, rank }))
    .sort((a, b) => {
      const x = a.product[sort];
      const y = b.product[sort];
      if (x === null || x === undefined) return y === null || y === undefined ? a.rank - b.rank : 1;
      if (y === null || y === undefined) return -1;
      const cmp = compare(x, y);
      return cmp === 0 ? a.rank - b.rank : sign * cmp;
    })
    .map(({ product }) => product);
}

function compare(x: unknown, y: unknown): number {
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  if (typeof x === 'boolean' && typeof y === 'boolean') return Number(x) - Number(y);
  const a = String(x);
  const b = String(y);
  // Decimal text compares as numbers when both are numbers.
  const na = Number(a);
  const nb = Number(b);
  if (a !== '' && b !== '' && Number.isFinite(na) && Number.isFinite(nb)) return na - nb;
  return a < b ? -1 : a > b ? 1 : 0;
}
