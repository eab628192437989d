import { rng } from '../lib/generator.js';

/**
 * A seeded synthetic shop for the recommendation benchmark: a catalogue in a three-level category
 * hierarchy, bundles (products bought together), and customers whose histories follow planted
 * affinities — a loyal sub-category, two bundles in it — with popular products as noise. Each
 * customer's purchases are distinct products; the last one of a test customer is held out.
 */
export interface ShopOptions {
  products: number;
  customers: number;
  seed: number;
  /** Purchases per customer, at least this many (plus up to 4). */
  minPurchases: number;
}

export interface Product {
  product_id: string;
  name: string;
  category: string;
  price: number;
  image_url: string;
}

export interface Interaction {
  /** `detail`, `add_to_cart` or `purchase`. */
  action: string;
  product: string;
  /** Unix seconds. */
  ts: number;
}

export interface Customer {
  email: string;
  history: Interaction[];
  /** The held-out purchase (the customer's last), absent from `history`. */
  heldOut: string;
}

export interface Shop {
  products: Product[];
  customers: Customer[];
}

const TOP = ['Electronics', 'Home', 'Garden', 'Sports', 'Fashion', 'Books', 'Toys', 'Beauty', 'Food', 'Auto'];
const SUBS_PER_TOP = 10;
const LEAVES_PER_SUB = 5;
const BUNDLE_SIZE = 3;

export function generateShop(opt: ShopOptions): Shop {
  const random = rng(opt.seed);
  const int = (n: number) => Math.floor(random() * n);
  const subs = TOP.length * SUBS_PER_TOP;
  const products: Product[] = [];
  const bySub: number[][] = Array.from({ length: subs }, () => []);
  for (let i = 0; i < opt.products; i++) {
    const sub = i % subs;
    const top = Math.floor(sub / SUBS_PER_TOP);
    const leaf = int(LEAVES_PER_SUB);
    products.push({
      product_id: `p${i}`,
      name: `Product ${i}`,
      category: `${TOP[top]} > Sub ${sub} > Leaf ${sub}.${leaf}`,
      price: 5 + int(500),
      image_url: `https://img.example.com/p${i}.jpg`,
    });
    bySub[sub]!.push(i);
  }
  // Popularity: Zipf-like weights over a shuffled order, so popular products are spread over categories.
  const order = products.map((_, i) => i).sort(() => random() - 0.5);
  const weight = new Array<number>(products.length);
  order.forEach((p, rank) => (weight[p] = 1 / (rank + 1) ** 0.9));
  const cumulative: number[] = [];
  let total = 0;
  for (const w of weight) cumulative.push((total += w));
  const popular = () => {
    const x = random() * total;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  // Bundles: groups of products of one sub-category that go together.
  const bundlesBySub = bySub.map((members) => {
    const shuffled = [...members].sort(() => random() - 0.5);
    const bundles: number[][] = [];
    for (let i = 0; i + BUNDLE_SIZE <= shuffled.length; i += BUNDLE_SIZE) {
      bundles.push(shuffled.slice(i, i + BUNDLE_SIZE));
    }
    return bundles;
  });

  const now = Math.floor(Date.now() / 1000);
  const customers: Customer[] = [];
  for (let c = 0; c < opt.customers; c++) {
    const sub = int(subs);
    const bundles = bundlesBySub[sub]!;
    const mine = [bundles[int(bundles.length)]!, bundles[int(bundles.length)]!];
    const count = opt.minPurchases + int(5);
    const bought = new Set<number>();
    const purchases: number[] = [];
    const pickNew = (draw: () => number) => {
      for (let tries = 0; tries < 20; tries++) {
        const p = draw();
        if (!bought.has(p)) return p;
      }
      return undefined;
    };
    for (let k = 0; k < count; k++) {
      const roll = random();
      const p =
        roll < 0.5
          ? pickNew(() => mine[int(2)]![int(BUNDLE_SIZE)]!)
          : roll < 0.75
            ? pickNew(() => bySub[sub]![int(bySub[sub]!.length)]!)
            : pickNew(popular);
      if (p === undefined) continue;
      bought.add(p);
      purchases.push(p);
    }
    if (purchases.length < 2) continue;
    // Spread over the last 28 days, in order; each purchase after a look or two at products of the
    // loyal sub-category and an add to cart.
    const history: Interaction[] = [];
    const start = now - 28 * 86_400;
    const step = (28 * 86_400) / (purchases.length + 1);
    purchases.forEach((p, k) => {
      const ts = Math.floor(start + step * (k + 1));
      const looks = 1 + int(2);
      for (let l = 0; l < looks; l++) {
        history.push({
          action: 'detail',
          product: `p${random() < 0.5 ? p : bySub[sub]![int(bySub[sub]!.length)]!}`,
          ts: ts - 600 + l,
        });
      }
      history.push({ action: 'add_to_cart', product: `p${p}`, ts: ts - 60 });
      history.push({ action: 'purchase', product: `p${p}`, ts });
    });
    const last = `p${purchases.at(-1)!}`;
    // The held-out purchase goes, with the looks and cart just before it (they would give it away).
    const lastTs = history.at(-1)!.ts;
    customers.push({
      email: `c${c}@shop.example`,
      history: history.filter((h) => h.ts < lastTs - 600),
      heldOut: last,
    });
  }
  return { products, customers };
}

/** A customer's history as `POST /v3/events` records: product events, and one order per purchase. */
export function historyEvents(customer: Customer, orderPrefix: string): Record<string, unknown>[] {
  return customer.history.map((h, i) =>
    h.action === 'purchase'
      ? {
          type: 'order',
          action: 'purchase',
          identifiers: { email: customer.email },
          data: {
            ts: h.ts,
            order: {
              order_id: `${orderPrefix}-${i}`,
              items: [{ product_id: h.product, price: 10, quantity: 1, subtotal: 10 }],
            },
          },
        }
      : {
          type: 'product',
          action: h.action,
          identifiers: { email: customer.email },
          data: { ts: h.ts, product_id: h.product },
        },
  );
}
