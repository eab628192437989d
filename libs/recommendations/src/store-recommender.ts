import { LRUCache } from 'lru-cache';
import { AnalyticStore } from '@cdp/store';
import { neighbourLists, rank, relatedScores, type Neighbours, type Pair } from './ranking.js';
import {
  BEST_SELLERS_SQL,
  CUSTOMER_SQL,
  MERGED_SQL,
  PAIRS_SQL,
  POPULARITY_SQL,
  PRODUCTS_SQL,
} from './recommendation.query.js';
import { passesRules } from './recommendation-rules.js';
import { RecommendationTables } from './recommendation-tables.js';
import {
  Recommender,
  type RecommendationRequest,
  type RecommendedProduct,
  type RecommendationType,
} from './recommender.port.js';

/**
 * How long what every customer shares is reused in this process: an account's best sellers, a
 * product's related products, a product's record. The tables behind them are refreshed every second
 * and the product feed changes rarely; what is the customer's own (seeds, purchases) is read fresh.
 */
export const SHARED_TTL_MS = 2_000;

type ProductRecord = Record<string, unknown> & { product_id: string };

/**
 * Recommendations from the store this process holds. A request reads the customer's seeds and
 * purchases (one small query), the related products of the seeds and the page's products and the
 * best sellers (precomputed tables, reused a moment), ranks a few hundred candidates here, and answers
 * the records of the best that pass the rules.
 */
export class StoreRecommender extends Recommender {
  private readonly bestSellers: LRUCache<string, string[]>;
  /** `account/product` → related products (an empty list when none). */
  private readonly neighbours = new LRUCache<string, Neighbours>({ max: 200_000, ttl: SHARED_TTL_MS });
  /** `account/product` → its record, or null when the feed has none. */
  private readonly records = new LRUCache<string, { record: ProductRecord | null }>({
    max: 200_000,
    ttl: SHARED_TTL_MS,
  });

  constructor(
    private readonly store: AnalyticStore,
    private readonly tables = new RecommendationTables(store),
  ) {
    super();
    this.bestSellers = new LRUCache<string, string[]>({
      max: 10_000,
      ttl: SHARED_TTL_MS,
      fetchMethod: async (account) =>
        (await this.store.query<{ product_id: string }>(account, BEST_SELLERS_SQL)).map((r) => r.product_id),
    });
  }

  async recommend(request: RecommendationRequest): Promise<RecommendedProduct[]> {
    const { account } = request;
    await this.tables.ensure(account);
    const [history, best] = await Promise.all([
      this.history(account, request.customer),
      this.bestSellers.fetch(account),
    ]);
    const neighbours = await this.neighboursOf(account, [...history.seeds.keys(), ...request.productIds]);
    const tiers: [RecommendationType, string[]][] = [
      ['contextual', relatedScores(neighbours, new Map(request.productIds.map((id) => [id, 1])))],
      ['personal', relatedScores(neighbours, history.seeds)],
      ['best_sellers', best ?? []],
    ];
    const ranked = rank(tiers, new Set([...history.bought, ...request.productIds]));
    const records = await this.recordsOf(
      account,
      ranked.map((r) => r.product_id),
    );
    const top: RecommendedProduct[] = [];
    for (const { product_id, type } of ranked) {
      const record = records.get(product_id);
      if (!record || !passesRules(request.rules, record)) continue; // no record, or left out by the rules
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
    const merged = await this.store.query<{ svc_id: string }>(account, MERGED_SQL, { customer });
    const rows = await this.store.query<{ kind: string; product_id: string; weight: number }>(
      account,
      CUSTOMER_SQL,
      { ids: [customer, ...merged.map((m) => m.svc_id)] },
    );
    const strongest = Math.max(0, ...rows.filter((r) => r.kind === 'seed').map((r) => Number(r.weight)));
    for (const r of rows) {
      if (r.kind === 'bought') bought.push(r.product_id);
      else if (strongest > 0) seeds.set(r.product_id, Number(r.weight) / strongest);
    }
    return { seeds, bought };
  }

  /** The related products of these products: reused ones, the others read in two queries. */
  private async neighboursOf(account: string, products: readonly string[]): Promise<Map<string, Neighbours>> {
    const out = new Map<string, Neighbours>();
    const missing: string[] = [];
    for (const id of new Set(products)) {
      const cached = this.neighbours.get(`${account}/${id}`);
      if (cached) out.set(id, cached);
      else missing.push(id);
    }
    if (missing.length === 0) return out;
    const pairs = (await this.store.query<Pair>(account, PAIRS_SQL, { sources: missing })).map((p) => ({
      ...p,
      score: Number(p.score),
    }));
    const ids = [...new Set([...missing, ...pairs.map((p) => p.related)])];
    const popularity = new Map(
      (await this.store.query<{ product_id: string; pop: number }>(account, POPULARITY_SQL, { ids })).map(
        (r) => [r.product_id, Number(r.pop)],
      ),
    );
    const lists = neighbourLists(pairs, popularity);
    for (const id of missing) {
      const list = lists.get(id) ?? [];
      this.neighbours.set(`${account}/${id}`, list);
      out.set(id, list);
    }
    return out;
  }

  /** The records of these products (those the feed has): reused ones, the others read in one query. */
  private async recordsOf(account: string, products: readonly string[]): Promise<Map<string, ProductRecord>> {
    const out = new Map<string, ProductRecord>();
    const missing: string[] = [];
    for (const id of products) {
      const cached = this.records.get(`${account}/${id}`);
      if (!cached) missing.push(id);
      else if (cached.record) out.set(id, cached.record);
    }
    if (missing.length === 0) return out;
    const rows = await this.store.query<ProductRecord>(account, PRODUCTS_SQL, { ids: missing });
    const found = new Map(rows.map((r) => [r.product_id, r]));
    for (const id of missing) {
      const record = found.get(id) ?? null;
      this.records.set(`${account}/${id}`, { record });
      if (record) out.set(id, record);
    }
    return out;
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
