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
    await storeProducts(store, account, ['laptop', 'mouse', 'pan']);
    const now = Date.now();
    const ts = new Date(now - 3_600_000).toISOString().replace('T', ' ').slice(0, 23);
    let id = 0;
    for (const [customer, products] of [
      ['b1', ['laptop', 'mouse']],
      ['b2', ['laptop', 'mouse']],
      ['cook1', ['pan']],
      ['cook2', ['pan']],
      ['cook3', ['pan']],
      ['ann', ['laptop']],
    ] as const) {
      await storePurchase(store, account, {
        id: `m${++id}`,
        customer,
        products: [...products],
        ts,
        commitMs: now,
      });
    }
    await new RecommendationsRefresh(store).refresh(account);
    notices = new MemoryPurchaseNotices();
    recommender = new StoreRecommender(store, notices);
  });
  afterAll(() => store.close());

  it('answers from the refreshed tables: related to her laptop first, then best sellers', async () => {
    expect(await ask('ann')).toEqual(['mouse:personal', 'pan:best_sellers']);
  });

  it('leaves out a purchase the processor noticed at once, with no refresh in between', async () => {
    expect(await ask('ann')).toContain('pan:best_sellers'); // kept in memory since the last answer
    notices.notify({ account, purchases: [{ customer: 'ann', product: 'pan' }] });
    expect(await ask('ann')).toEqual(['mouse:personal']);
    expect(await ask('somebody')).toContain('pan:best_sellers'); // hers only
  });
});
