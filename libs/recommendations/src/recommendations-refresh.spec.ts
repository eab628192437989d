import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouseStore } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { inline } from './recommendation-tables.js';
import { RELATED_SQL } from './recommendation.query.js';
import { RecommendationsRefresh } from './recommendations-refresh.js';
import { RELATED_OF_ALL } from './recommendations.sql.js';
import { storePurchase } from './testing/stored-rows.js';

/**
 * The refresh on chDB: purchases written as the processor writes them (line items, then the message's
 * commit), refreshed generation by generation, and the related lists read as a request reads them.
 */
describe('RecommendationsRefresh on chDB', () => {
  let store: ClickHouseStore;
  let clock = Date.UTC(2026, 0, 10);
  const refresh = () => new RecommendationsRefresh(store, undefined, () => (clock += 1000));
  let message = 0;

  beforeAll(() => {
    store = new ClickHouseStore(new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-rec-refresh-'))));
  });
  afterAll(() => store.close());

  /** One message: `customer` bought `products` on `day` (of January 2026). */
  const purchase = (account: string, customer: string, products: string[], day = 1) =>
    storePurchase(store, account, {
      id: `m${++message}`,
      customer,
      products,
      ts: `2026-01-${String(day).padStart(2, '0')} 12:00:00.000`,
      commitMs: clock,
    });

  async function related(account: string, ids: string[]): Promise<Map<string, string[]>> {
    const rows = await store.query<{ product_id: string; related: string[] }>(account, RELATED_SQL, { ids });
    return new Map(rows.map((r) => [r.product_id, r.related]));
  }

  it('relates co-purchases by cosine: a product everyone buys does not win by being popular', async () => {
    const account = 'cosine';
    // Two bought a laptop with a mouse; five bought a laptop with a charger, which 40 others bought alone.
    for (let i = 0; i < 2; i++) await purchase(account, `a${i}`, ['laptop', 'mouse']);
    for (let i = 0; i < 5; i++) await purchase(account, `b${i}`, ['laptop', 'charger']);
    for (let i = 0; i < 40; i++) await purchase(account, `c${i}`, ['charger']);
    expect(await refresh().refresh(account)).toBe(47);
    expect((await related(account, ['laptop'])).get('laptop')).toEqual(['mouse', 'charger']);
  });

  it('keeps every related list what a full recomputation makes, generation after generation', async () => {
    const account = 'incremental';
    const r = refresh();
    const products = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'];
    let seed = 7;
    const pick = () => products[(seed = (seed * 31 + 11) % 97) % products.length]!;
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 5; i++)
        await purchase(account, `c${(round * 3 + i) % 9}`, [pick(), pick()], round + 1);
      expect(await r.refresh(account)).toBe(5);
    }
    const kept = await related(account, products);
    // The same lists computed from scratch, under a version above every generation's.
    await store.execute(account, inline(RELATED_OF_ALL, { gen: clock * 2 }));
    const full = await related(account, products);
    expect(full.size).toBeGreaterThan(4);
    expect(kept).toEqual(full);
  });

  it('finds nothing to do when nothing was committed, and takes in what was', async () => {
    const account = 'idle';
    const r = refresh();
    await purchase(account, 'x', ['a', 'b']);
    expect(await r.refresh(account)).toBe(1);
    expect(await r.refresh(account)).toBe(0);
    await purchase(account, 'y', ['a', 'c']);
    expect(await r.refresh(account)).toBe(1);
    // Another refresher (a restart, or the lease moving) finds the same state and nothing left to take.
    expect(await refresh().refresh(account)).toBe(0);
    expect((await related(account, ['a'])).get('a')?.sort()).toEqual(['b', 'c']);
  });
});
