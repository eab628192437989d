import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouseStore } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { MemoryPurchaseNotices } from '@cdp/recommendations/memory';
import { RecommendationsRefresh } from './recommendations-refresh.js';
import type { RecommendationRequest } from './recommender.port.js';
import { StoreRecommender } from './store-recommender.js';
import { storeProducts, storePurchase } from './testing/stored-rows.js';

/** The recommender on chDB, refreshed by hand: what it answers between two refreshes. */
describe('StoreRecommender on chDB', () => {
  const account = 'shop';
  let store: ClickHouseStore;
  let notices: MemoryPurchaseNotices;
  let recommender: StoreRecommender;
  const ask = async (customer: string, more: Partial<RecommendationRequest> = {}) =>
    (
      await recommender.recommend({
        account,
        customer,
        productIds: [],
        limit: 10,
        sort: undefined,
        order: 'desc',
        rules: {},
        ...more,
      })
    ).map((p) => `${p.product_id}:${p.recommendation_type}`);

  beforeAll(async () => {
    store = new ClickHouseStore(new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-rec-store-'))));
    await storeProducts(store, account, ['laptop', 'mouse', 'pan', 'pot', 'lid', 'vase']);
    const now = Date.now();
    const daysAgo = (days: number) =>
      new Date(now - days * 86_400_000).toISOString().replace('T', ' ').slice(0, 23);
    const purchases: [string, string[], number?, number?][] = [
      ['b1', ['laptop', 'mouse']],
      ['b2', ['laptop', 'mouse']],
      ['cook1', ['pan']],
      ['cook2', ['pan']],
      ['cook3', ['pan']],
      // Two units each of the pot, the mouse and the lid: revenue 35, 20 and 10 rank them.
      ['cook4', ['pot'], 0.04, 30],
      ['cook5', ['pot'], 0.04, 5],
      ['cook6', ['lid'], 0.04, 5],
      ['cook7', ['lid'], 0.04, 5],
      // Sold most of all, but ten days ago: out of the 7-day window.
      ...[1, 2, 3, 4, 5, 6].map((i): [string, string[], number] => [`old${i}`, ['vase'], 10]),
      ['ann', ['laptop']],
      // Bought the mouse 200 days ago: no longer left out.
      ['olga', ['mouse'], 200],
      ['olga', ['laptop']],
    ];
    let id = 0;
    for (const [customer, products, days = 0.04, price] of purchases) {
      await storePurchase(store, account, {
        id: `m${++id}`,
        customer,
        products,
        ts: daysAgo(days),
        commitMs: now,
        ...(price === undefined ? {} : { price }),
      });
    }
    await new RecommendationsRefresh(store).refresh(account);
    notices = new MemoryPurchaseNotices();
    recommender = new StoreRecommender(store, notices);
  });
  afterAll(() => store.close());

  it('answers from the refreshed tables: related to her laptop first, then best sellers', async () => {
    expect(await ask('ann')).toEqual([
      'mouse:personal',
      'pan:best_sellers',
      'pot:best_sellers',
      'lid:best_sellers',
    ]);
  });

  it('ranks best sellers of the last 7 days by units, then revenue', async () => {
    // The laptop 4 units, the pan 3; the vase's six, ten days ago, do not count.
    expect(await ask('nobody')).toEqual([
      'laptop:best_sellers',
      'pan:best_sellers',
      'pot:best_sellers',
      'mouse:best_sellers',
      'lid:best_sellers',
    ]);
  });

  it('leaves out what the customer bought in the last 180 days only', async () => {
    expect(await ask('olga')).toContain('mouse:personal');
  });

  it('leaves out a purchase the processor noticed at once, with no refresh in between', async () => {
    expect(await ask('ann')).toContain('pan:best_sellers'); // kept in memory since the last answer
    notices.notify({ account, purchases: [{ customer: 'ann', product: 'pan' }] });
    expect(await ask('ann')).toEqual(['mouse:personal', 'pot:best_sellers', 'lid:best_sellers']);
    expect(await ask('somebody')).toContain('pan:best_sellers'); // hers only
  });
});
