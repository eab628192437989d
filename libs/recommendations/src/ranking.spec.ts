import { rank, relatedScores } from './ranking.js';

describe('ranking', () => {
  it('sums each source’s related products by the source’s weight, best first', () => {
    const lists = new Map<string, [string, number][]>([
      [
        'laptop',
        [
          ['mouse', 0.9],
          ['charger', 0.5],
        ],
      ],
      [
        'phone',
        [
          ['charger', 0.6],
          ['case', 0.4],
        ],
      ],
    ]);
    // charger: 0.5 + 0.6 beats mouse's 0.9; case 0.4 last.
    expect(
      relatedScores(
        lists,
        new Map([
          ['laptop', 1],
          ['phone', 1],
        ]),
      ),
    ).toEqual(['charger', 'mouse', 'case']);
    // A weaker source counts less: mouse 0.9 beats charger 0.5 + 0.6 · 0.1.
    expect(
      relatedScores(
        lists,
        new Map([
          ['laptop', 1],
          ['phone', 0.1],
        ]),
      ),
    ).toEqual(['mouse', 'charger', 'case']);
    // Only the sources given count.
    expect(relatedScores(lists, new Map([['tv', 1]]))).toEqual([]);
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
