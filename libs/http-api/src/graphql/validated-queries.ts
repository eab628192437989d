/** How many validated query shapes a process remembers (all forgotten at once past it). */
const MAX_REMEMBERED = 10_000;

/**
 * The query shapes that passed validation, so that a query differing from one of them only in its string
 * literals is not validated again: Optimizely's SDKs paste the user id into the same query text, and
 * graphql-js's validation was most of a lookup's CPU (docs/benchmarks.md "Event digests"). No rule reads a
 * string literal's content (the schema's inputs are String, Int and lists of String), and only queries
 * that validated are remembered, so a refused query is validated (and answered with its errors) every time.
 */
export class ValidatedQueries {
  private readonly shapes = new Set<string>();

  /** Whether a query of this shape validated against this schema before. */
  has(schemaKey: string, query: string): boolean {
    const shape = shapeOf(query);
    return shape !== undefined && this.shapes.has(`${schemaKey}\n${shape}`);
  }

  remember(schemaKey: string, query: string): void {
    const shape = shapeOf(query);
    if (shape === undefined) return;
    if (this.shapes.size >= MAX_REMEMBERED) this.shapes.clear();
    this.shapes.add(`${schemaKey}\n${shape}`);
  }
}

/**
 * A parsed query's text with every string literal emptied. In a query without comments and block strings a
 * `"` only opens or closes a string (escapes aside), so the pattern finds exactly its string tokens; a
 * query with either is not keyed (validated each time).
 */
export function shapeOf(query: string): string | undefined {
  if (query.includes('#') || query.includes('"""')) return undefined;
  return query.replace(/"(?:[^"\\\n]|\\.)*"/g, '""');
}
