/**
 * A seeded generator of realistic event batches: the same seed gives the same bytes, so runs compare.
 * A population of visitors, some known by email, browsing, carting and buying.
 */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PAGES = ['/', '/shoes', '/shoes/trail', '/bags', '/sale', '/cart', '/checkout', '/account'];
const PRODUCTS = Array.from({ length: 500 }, (_, i) => `sku-${i}`);

export function eventBatch(
  random: () => number,
  size: number,
  population: number,
): Record<string, unknown>[] {
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]!;
  return Array.from({ length: size }, () => {
    const visitor = Math.floor(random() * population);
    const identifiers: Record<string, string> = { vuid: `vuid-${visitor}` };
    if (visitor % 3 === 0) identifiers.email = `customer${visitor}@example.com`;
    const roll = random();
    if (roll < 0.6) {
      return {
        type: 'pageview',
        identifiers,
        data: {
          page: pick(PAGES),
          title: 'Shop',
          hostname: 'shop.example.com',
          ua: 'Mozilla/5.0',
          ip: '198.51.100.7',
        },
      };
    }
    if (roll < 0.9) {
      return {
        type: 'product',
        action: pick(['detail', 'add_to_cart', 'remove_from_cart']),
        identifiers,
        data: { product_id: pick(PRODUCTS), category: 'Shoes > Trail' },
      };
    }
    return {
      type: 'navigation',
      action: 'search',
      identifiers,
      data: { search_term: pick(['boots', 'socks', 'red bag']), category: 'Shoes' },
    };
  });
}
