import { LRUCache } from 'lru-cache';
import { AnalyticStore } from '@cdp/store';
import { rank, relatedScores, type Neighbours } from './ranking.js';
import {
  ACTIVE_CUSTOMERS_SQL,
  BEST_SELLERS_SQL,
  HISTORIES_SQL,
  PRODUCTS_SQL,
  RELATED_SQL,
} from './recommendation.query.js';
import { FreshPurchases } from './fresh-purchases.js';
import type { PurchaseNotices } from './purchase-notices.port.js';
import { passesRules } from './recommendation-rules.js';
import { BatchedLoader } from './batched-loader.js';
import { RecommendationTables } from './recommendation-tables.js';
import {
  BOUGHT_WINDOW_DAYS,
  DECAY_EPOCH_MS,
  HALF_LIFE_MS,
  SEED_INTERACTIONS,
} from './recommendations.sql.js';
import { RefreshGenerations, type Changes } from './refresh-generations.js';
import {
  Recommender,
  type RecommendationRequest,
  type RecommendedProduct,
  type RecommendationType,
} from './recommender.port.js';

/**
 * The longest anything is kept in this process when no refresh generation changes it (a generation
 * drops exactly what it changed): a bound on what a missed change could cost, and on the 180-day
 * window of a kept history's purchases.
 */
export const SHARED_MAX_AGE_MS = 600_000;
/** At most this many customers whose kept histories a generation dropped are read again at once. */
const REWARM_MAX = 2_000;
/** Histories read ahead per statement when an account is first seen (one batched read each). */
const WARM_BATCH = 500;
/** Read ahead only while the kept histories fill less than this share of their bound. */
const WARM_SHARE = 0.5;
/** How old an account's best sellers may grow before they are read again: their 7-day window moves. */
export const BEST_SELLERS_MAX_AGE_MS = 60_000;

type ProductRecord = Record<string, unknown> & { product_id: string };

/** An account's best sellers as read at an epoch and time; `rereading`: a newer read is under way. */
interface BestSellers {
  epoch: number;
  at: number;
  ids: Promise<string[]>;
  rereading: boolean;
}

interface AccountReads {
  histories: BatchedLoader<History>;
  neighbours: BatchedLoader<Neighbours>;
  records: BatchedLoader<ProductRecord | null>;
}

/** A customer's refreshed history: whose it is (them and whoever was merged into them), seeds, purchases. */
interface History {
  ids: string[];
  /** product → weight, the strongest 1. */
  seeds: Map<string, number>;
  /** Bought in the last 180 days. */
  bought: string[];
}

/**
 * Recommendations from the store this process holds. What a request reads — the customer's history,
 * the precomputed related lists of its seeds and of the page's products, the best sellers, product
 * records — is read from the refreshed tables once and kept in memory per account until a refresh
 * generation changes it (RefreshGenerations); the purchases no generation took in yet come from the
 * processor's notices (PurchaseNotices). A request whose customer and products were seen before reads
 * nothing from the store; a customer's first reads their history in one statement, batched with
 * other requests'. It ranks a few hundred candidates and answers the records of the best that pass
 * the rules.
 */
export class StoreRecommender extends Recommender {
  private readonly generations: RefreshGenerations;
  private readonly fresh = new FreshPurchases();
  /** account → its best sellers, as read at an epoch and time. */
  private readonly bestSellers = new Map<string, BestSellers>();
  /**
   * `account/product` → related products (an empty list when none); bounded by pairs held (up to 300 a
   * product, about 80 bytes each): 2 000 000 hold every list of a 6 000-product catalogue.
   */
  private readonly neighbours = new LRUCache<string, Neighbours>({
    maxSize: 2_000_000,
    sizeCalculation: (n) => 1 + n.length,
    ttl: SHARED_MAX_AGE_MS,
  });
  /** `account/product` → its record, or null when the feed has none. */
  private readonly records = new LRUCache<string, { record: ProductRecord | null }>({
    max: 200_000,
    ttl: SHARED_MAX_AGE_MS,
  });
  /** `account/customer` → their refreshed history; bounded by products named (about 100 bytes each). */
  private readonly histories = new LRUCache<string, History>({
    maxSize: 2_000_000,
    sizeCalculation: (h) => 1 + h.ids.length + h.seeds.size + h.bought.length,
    ttl: SHARED_MAX_AGE_MS,
  });
  private readonly accountReads = new Map<string, AccountReads>();
  /** Accounts whose active customers' histories were read ahead in this process. */
  private readonly warmed = new Set<string>();

  constructor(
    private readonly store: AnalyticStore,
    notices?: PurchaseNotices,
    private readonly tables = new RecommendationTables(store),
  ) {
    super();
    this.generations = new RefreshGenerations(store, this.fresh, (account, changes) =>
      this.forget(account, changes),
    );
    notices?.listen(({ account, purchases }) => {
      for (const { customer, product } of purchases) this.fresh.add(account, customer, product);
    });
  }

  async recommend(request: RecommendationRequest): Promise<RecommendedProduct[]> {
    const { account } = request;
    await this.tables.ensure(account);
    const generation = await this.generations.current(account);
    const [history, best] = await Promise.all([
      this.history(account, request.customer),
      this.bestSellersOf(account, generation.epoch),
    ]);
    const neighbours = await this.neighboursOf(account, [...history.seeds.keys(), ...request.productIds]);
    const tiers: [RecommendationType, string[]][] = [
      ['contextual', relatedScores(neighbours, new Map(request.productIds.map((id) => [id, 1])))],
      ['personal', relatedScores(neighbours, history.seeds)],
      ['best_sellers', best],
    ];
    const ranked = rank(tiers, new Set([...history.bought, ...request.productIds]));
    const top: RecommendedProduct[] = [];
    // Records are read for as many candidates as can still fill the answer, in rank order.
    for (let from = 0; from < ranked.length && top.length < request.limit;) {
      const batch = ranked.slice(from, from + Math.max(2 * (request.limit - top.length), 20));
      from += batch.length;
      const records = await this.recordsOf(
        account,
        batch.map((r) => r.product_id),
      );
      for (const { product_id, type } of batch) {
        const record = records.get(product_id);
        if (!record || !passesRules(request.rules, record)) continue; // no record, or left out by the rules
        top.push({ ...record, recommendation_type: type });
        if (top.length === request.limit) break;
      }
    }
    return order(top, request);
  }

  /**
   * Drops what a finished refresh generation changed, and reads again in the background the histories
   * it dropped (a customer who just did something is the likeliest to ask next).
   */
  private forget(account: string, changes: Changes): void {
    // The best sellers are read again at the new epoch (see bestSellersOf).
    const prefix = `${account}/`;
    const dropAll = <V extends object>(cache: LRUCache<string, V>) => {
      const dropped: string[] = [];
      for (const key of [...cache.keys()]) {
        if (key.startsWith(prefix) && cache.delete(key)) dropped.push(key.slice(prefix.length));
      }
      return dropped;
    };
    let rewarm: string[];
    if (changes.all) {
      // The first generation seen, a failed look-up or a great many changes: not worth reading again,
      // except ahead, once per account (see warm).
      dropAll(this.neighbours);
      dropAll(this.records);
      dropAll(this.histories);
      if (!this.warmed.has(account)) {
        this.warmed.add(account);
        setImmediate(() => void this.warm(account).catch(() => this.warmed.delete(account)));
      }
      return;
    } else {
      for (const id of changes.products) {
        this.neighbours.delete(prefix + id);
        this.records.delete(prefix + id);
      }
      if (changes.merged) rewarm = dropAll(this.histories);
      else rewarm = changes.customers.filter((id) => this.histories.delete(prefix + id));
    }
    // After the generation's epoch is current (RefreshGenerations bumps it once this returns).
    setImmediate(() => {
      for (const customer of rewarm.slice(0, REWARM_MAX))
        void this.history(account, customer).catch(() => {});
    });
  }

  /**
   * Reads ahead, in the background, the histories of the account's most recently active customers —
   * exactly as their first request would, and kept under the same rule (dropped by the generations that
   * change them) — while the kept histories fill less than half their bound; so a customer's first
   * request reads nothing from the store unless the account has more active customers than that holds.
   */
  private async warm(account: string): Promise<void> {
    const customers = (await this.store.query<{ svc_id: string }>(account, ACTIVE_CUSTOMERS_SQL)).map(
      (r) => r.svc_id,
    );
    for (let from = 0; from < customers.length; from += WARM_BATCH) {
      if (this.histories.calculatedSize >= WARM_SHARE * this.histories.maxSize) return;
      await Promise.all(customers.slice(from, from + WARM_BATCH).map((c) => this.history(account, c)));
    }
  }

  /** Keeps a read only when no generation changed anything since it started. */
  private keep<V extends object>(
    cache: LRUCache<string, V>,
    account: string,
    epoch: number,
    key: string,
    value: V,
  ) {
    if (this.generations.epoch(account) === epoch) cache.set(key, value);
  }

  /**
   * The account's best sellers: read again in the background once a generation changed them or they are
   * BEST_SELLERS_MAX_AGE_MS old, the ones kept answering meanwhile; only the first read is waited for.
   */
  private bestSellersOf(account: string, epoch: number): Promise<string[]> {
    const kept = this.bestSellers.get(account);
    if (!kept) return this.readBestSellers(account, epoch).ids;
    if ((kept.epoch !== epoch || Date.now() - kept.at >= BEST_SELLERS_MAX_AGE_MS) && !kept.rereading) {
      kept.rereading = true;
      void this.readBestSellers(account, epoch).ids.catch(() => undefined);
    }
    return kept.ids;
  }

  private readBestSellers(account: string, epoch: number): BestSellers {
    const ids = this.store
      .query<{ product_id: string }>(account, BEST_SELLERS_SQL)
      .then((rows) => rows.map((r) => r.product_id));
    const entry: BestSellers = { epoch, at: Date.now(), ids, rereading: false };
    const previous = this.bestSellers.get(account);
    if (previous) {
      // A reread replaces the kept ones once it has them.
      void ids.then(
        () => this.bestSellers.get(account) === previous && this.bestSellers.set(account, entry),
        () => (previous.rereading = false),
      );
    } else {
      this.bestSellers.set(account, entry);
      ids.catch(() => {
        if (this.bestSellers.get(account) === entry) this.bestSellers.delete(account);
      });
    }
    return entry;
  }

  /**
   * The customer's seeds (product → weight, the strongest 1) and purchases of the last 180 days: the
   * refreshed ones (kept until a generation brings them new interactions or a merge) and the fresh ones.
   */
  private async history(
    account: string,
    customer: string | undefined,
  ): Promise<{ seeds: ReadonlyMap<string, number>; bought: string[] }> {
    if (customer === undefined) return { seeds: new Map(), bought: [] };
    const key = `${account}/${customer}`;
    let history = this.histories.get(key);
    if (!history) {
      const epoch = this.generations.epoch(account);
      history = await this.reads(account).histories.load(customer);
      this.keep(this.histories, account, epoch, key, history);
    }
    return { seeds: history.seeds, bought: [...history.bought, ...this.fresh.of(account, history.ids)] };
  }

  /** The histories of these customers, whoever was merged into them included, in one statement. */
  private async readHistories(account: string, customers: string[]): Promise<Map<string, History>> {
    const rows = await this.store.query<{
      kind: string;
      whose: string;
      product_id: string;
      ms: number;
      w: number;
    }>(account, HISTORIES_SQL, { customers });
    const boughtSince = Date.now() - BOUGHT_WINDOW_DAYS * 86_400_000;
    const survivorOf = new Map<string, string>();
    const seedsOf = new Map<string, { product: string; ms: number; w: number }[]>();
    const boughtOf = new Map<string, string[]>();
    for (const r of rows) {
      if (r.kind === 'merged') {
        survivorOf.set(r.whose, r.product_id);
        continue;
      }
      const seed = { product: r.product_id, ms: Number(r.ms), w: Number(r.w) };
      const list = seedsOf.get(r.whose);
      if (list) list.push(seed);
      else seedsOf.set(r.whose, [seed]);
      if (r.kind === 'purchase' && seed.ms >= boughtSince) {
        const bought = boughtOf.get(r.whose);
        if (bought) bought.push(r.product_id);
        else boughtOf.set(r.whose, [r.product_id]);
      }
    }
    // Each merged customer to the asked one it went into, directly or through another.
    const askedOf = (id: string): string | undefined => {
      const survivor = survivorOf.get(id);
      if (survivor === undefined) return undefined;
      return customers.includes(survivor) ? survivor : survivorOf.get(survivor);
    };
    const ids = new Map(customers.map((c) => [c, [c]]));
    for (const loser of survivorOf.keys()) {
      const asked = askedOf(loser);
      if (asked !== undefined && loser !== asked) ids.get(asked)?.push(loser);
    }
    const out = new Map<string, History>();
    for (const [customer, whose] of ids) {
      const latest = whose
        .flatMap((id) => seedsOf.get(id) ?? [])
        .sort((a, b) => b.ms - a.ms)
        .slice(0, SEED_INTERACTIONS);
      // Weighted by kind and decayed to the same scale as the affinities (see recommendations.sql.ts).
      const weights = new Map<string, number>();
      for (const { product, ms, w } of latest) {
        weights.set(product, (weights.get(product) ?? 0) + w * 2 ** ((ms - DECAY_EPOCH_MS) / HALF_LIFE_MS));
      }
      const strongest = Math.max(0, ...weights.values());
      const seeds = new Map<string, number>();
      if (strongest > 0) for (const [product, w] of weights) seeds.set(product, w / strongest);
      const bought = [...new Set(whose.flatMap((id) => boughtOf.get(id) ?? []))];
      out.set(customer, { ids: whose, seeds, bought });
    }
    return out;
  }

  /** The related products of these products: reused ones, the others read in one query. */
  private async neighboursOf(account: string, products: readonly string[]): Promise<Map<string, Neighbours>> {
    const out = new Map<string, Neighbours>();
    const missing: string[] = [];
    for (const id of new Set(products)) {
      const cached = this.neighbours.get(`${account}/${id}`);
      if (cached) out.set(id, cached);
      else missing.push(id);
    }
    if (missing.length === 0) return out;
    const epoch = this.generations.epoch(account);
    const { neighbours } = this.reads(account);
    const lists = await Promise.all(missing.map((id) => neighbours.load(id)));
    missing.forEach((id, i) => {
      this.keep(this.neighbours, account, epoch, `${account}/${id}`, lists[i]!);
      out.set(id, lists[i]!);
    });
    return out;
  }

  /** The precomputed related lists of these products (`rec_related`), in one point read. */
  private async readNeighbours(account: string, products: string[]): Promise<Map<string, Neighbours>> {
    const rows = await this.store.query<{ product_id: string; related: string[]; scores: number[] }>(
      account,
      RELATED_SQL,
      { ids: products },
    );
    return new Map(
      rows.map((r) => [r.product_id, r.related.map((id, i): [string, number] => [id, Number(r.scores[i])])]),
    );
  }

  /** The records of these products (those the feed has): reused ones, the others read. */
  private async recordsOf(account: string, products: readonly string[]): Promise<Map<string, ProductRecord>> {
    const out = new Map<string, ProductRecord>();
    const missing: string[] = [];
    for (const id of products) {
      const cached = this.records.get(`${account}/${id}`);
      if (!cached) missing.push(id);
      else if (cached.record) out.set(id, cached.record);
    }
    if (missing.length === 0) return out;
    const epoch = this.generations.epoch(account);
    const { records } = this.reads(account);
    const found = await Promise.all(missing.map((id) => records.load(id)));
    missing.forEach((id, i) => {
      const record = found[i]!;
      this.keep(this.records, account, epoch, `${account}/${id}`, { record });
      if (record) out.set(id, record);
    });
    return out;
  }

  private async readRecords(account: string, ids: string[]): Promise<Map<string, ProductRecord>> {
    const rows = await this.store.query<ProductRecord>(account, PRODUCTS_SQL, { ids });
    return new Map(rows.map((r) => [r.product_id, r]));
  }

  /** The account's batched reads of what is not kept: many requests' look-ups a query. */
  private reads(account: string): AccountReads {
    let reads = this.accountReads.get(account);
    if (!reads) {
      reads = {
        histories: new BatchedLoader(
          (customers) => this.readHistories(account, customers),
          (customer) => ({ ids: [customer], seeds: new Map(), bought: [] }),
        ),
        neighbours: new BatchedLoader(
          (products) => this.readNeighbours(account, products),
          () => [],
        ),
        records: new BatchedLoader<ProductRecord | null>(
          (products) => this.readRecords(account, products),
          () => null,
        ),
      };
      this.accountReads.set(account, reads);
    }
    return reads;
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
