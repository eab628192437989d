import { FreshPurchases } from './fresh-purchases.js';
import { LATE_COMMITS_MS } from './recommendations.sql.js';

describe('FreshPurchases', () => {
  it('holds a purchase until a generation started well after it finished, per account', () => {
    let now = 1_000_000;
    const fresh = new FreshPurchases(() => now);
    fresh.add('a', 'ann', 'pan');
    fresh.add('b', 'ann', 'pot');
    expect(fresh.of('a', ['ann'])).toEqual(['pan']);
    // A generation that may have started before the purchase was committed lets nothing go.
    fresh.settle('a', now + LATE_COMMITS_MS);
    expect(fresh.of('a', ['ann'])).toEqual(['pan']);
    now += 5_000;
    fresh.add('a', 'bob', 'cup');
    fresh.settle('a', now - 5_000 + LATE_COMMITS_MS + 1);
    expect(fresh.of('a', ['ann', 'bob'])).toEqual(['cup']);
    expect(fresh.of('b', ['ann'])).toEqual(['pot']); // another account's are its own
  });

  it('answers for a customer and whoever was merged into them', () => {
    const fresh = new FreshPurchases();
    fresh.add('a', 'survivor', 'x');
    fresh.add('a', 'loser', 'y');
    expect(fresh.of('a', ['survivor', 'loser']).sort()).toEqual(['x', 'y']);
  });

  it('lets the oldest customers’ purchases go past its bound', () => {
    const fresh = new FreshPurchases(Date.now, 3);
    fresh.add('a', 'c1', 'p1');
    fresh.add('a', 'c2', 'p2');
    fresh.add('a', 'c3', 'p3');
    fresh.add('a', 'c4', 'p4');
    expect(fresh.of('a', ['c1', 'c2', 'c3', 'c4'])).toEqual(['p2', 'p3', 'p4']);
  });
});
