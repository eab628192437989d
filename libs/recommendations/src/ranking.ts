import { CANDIDATES_PER_KIND } from './recommendations.sql.js';
import type { RecommendationType } from './recommender.port.js';

export interface Pair {
  source: string;
  related: string;
  score: number;
}

export interface Ranked {
  product_id: string;
  type: RecommendationType;
}

/**
 * Scores related products: Σ over sources of weight(source) · affinity(source, related) /
 * √(popularity(source) · popularity(related)) — cosine similarity of co-interest, so a product popular
 * with everyone does not relate to everything. The best `CANDIDATES_PER_KIND` are kept.
 */
export function relatedScores(
  pairs: readonly Pair[],
  weights: ReadonlyMap<string, number>,
  popularity: ReadonlyMap<string, number>,
): string[] {
  const scores = new Map<string, number>();
  for (const { source, related, score } of pairs) {
    const weight = weights.get(source);
    const ps = popularity.get(source);
    const pr = popularity.get(related);
    if (weight === undefined || !ps || !pr) continue;
    scores.set(related, (scores.get(related) ?? 0) + (weight * score) / Math.sqrt(ps * pr));
  }
  return [...scores.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, CANDIDATES_PER_KIND)
    .map(([id]) => id);
}

/**
 * One ranking of every candidate, best first: products related to the page's products (contextual),
 * then to the customer's own history (personal), then the best sellers; each product once, under the
 * first kind that names it; excluded products (bought lately, on the page) never.
 */
export function rank(
  tiers: readonly [RecommendationType, readonly string[]][],
  excluded: ReadonlySet<string>,
): Ranked[] {
  const seen = new Set<string>();
  const out: Ranked[] = [];
  for (const [type, ids] of tiers) {
    for (const id of ids) {
      if (seen.has(id) || excluded.has(id)) continue;
      seen.add(id);
      out.push({ product_id: id, type });
    }
  }
  return out;
}
