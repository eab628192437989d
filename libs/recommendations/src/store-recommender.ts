import { LRUCache } from 'lru-cache';
import { AnalyticStore } from '@cdp/store';
import { recommendationSql, rulesFilter, TIERS } from './recommendation.query.js';
import { RecommendationTables } from './recommendation-tables.js';
import { Recommender, type RecommendationRequest, type RecommendedProduct } from './recommender.port.js';

/** How long the product table's columns are used before they are read again (custom fields come and go). */
const COLUMNS_TTL_MS = 5_000;

/** Recommendations from the store this process holds: one statement per request (recommendation.query.ts). */
export class StoreRecommender extends Recommender {
  private readonly columns: LRUCache<string, Set<string>>;

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
  }

  async recommend(request: RecommendationRequest): Promise<RecommendedProduct[]> {
    const { account } = request;
    await this.tables.ensure(account);
    const columns = (await this.columns.fetch(account)) ?? new Set<string>();
    const filter = rulesFilter(request.rules, columns);
    const rows = await this.store.query<Record<string, unknown> & { product_id: string; _tier: number }>(
      account,
      recommendationSql(filter.sql),
      {
        ...filter.params,
        customer: request.customer ?? '',
        context: request.productIds,
        limit: request.limit,
      },
    );
    const ranked = rows.map(({ _tier, ...product }) => ({
      ...product,
      recommendation_type: TIERS[_tier] ?? 'best_sellers',
    }));
    return order(ranked, request);
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
