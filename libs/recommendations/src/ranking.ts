import { CANDIDATES_PER_KIND } from './recommendations.sql.js';
import type { RecommendationType } from './recommender.port.js';

/** A product's related products, best first, with their normalised affinity (`rec_related`). */
export type Neighbours = [related: string, score: number][];

export interface Ranked {
  product_id: string;
  type: RecommendationType;
}

/** Σ over the sources of weight(source) · similarity(source, related): the best `CANDIDATES_PER_KIND`. */
export function relatedScores(
  neighbours: ReadonlyMap<string, Neighbours>,
  weights: ReadonlyMap<string, number>,
): string[] {
  const scores = new Map<string, number>();
  for (const [source, weight] of weights) {
    for (const [related, score] of neighbours.get(source) ?? []) {
      scores.set(related, (scores.get(related) ?? 0) + weight * score);
    }
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
