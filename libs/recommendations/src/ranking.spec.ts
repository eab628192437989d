import { neighbourLists, rank, relatedScores } from './ranking.js';

describe('ranking', () => {
  it('normalises affinity by popularity, so a product everyone touches does not win by being popular', () => {
    const pairs = [
      { source: 'laptop', related: 'mouse', score: 8 },
      { source: 'laptop', related: 'charger', score: 10 },
    ];
    const popularity = new Map([
      ['laptop', 10],
      ['mouse', 8],
      ['charger', 100],
    ]);
    const lists = neighbourLists(pairs, popularity);
    expect(relatedScores(lists, new Map([['laptop', 1]]))).toEqual(['mouse', 'charger']);
    // Only the sources given count.
    expect(relatedScores(lists, new Map([['phone', 1]]))).toEqual([]);
  });

  it('ranks kinds in order, each product once under its first kind, never an excluded one', () => {
    expect(
      rank(
        [
          ['contextual', ['a', 'b']],
          ['personal', ['b', 'c', 'x']],
          ['best_sellers', ['c', 'd']],
        ],
        new Set(['x']),
      ),
    ).toEqual([
      { product_id: 'a', type: 'contextual' },
      { product_id: 'b', type: 'contextual' },
      { product_id: 'c', type: 'personal' },
      { product_id: 'd', type: 'best_sellers' },
    ]);
  });
});
