import {
  GraphQLError,
  Kind,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';

/** The deepest selection a query may make: the SDKs' audience query is 5 deep. */
export const MAX_DEPTH = 10;
/** A query's cost: 1 a field, more for the fields that read state (each `customer`, `audiences`, `segments`). */
export const MAX_COST = 300;
const FIELD_COSTS: Readonly<Record<string, number>> = {
  customer: 20,
  audiences: 20,
  events: 20,
  segments: 10,
  lists: 10,
};

/**
 * Depth and cost of every operation, fragments expanded (graphql-js's own rules already refuse fragment
 * cycles), checked before anything is resolved.
 */
export function boundedQuery(context: ValidationContext): ASTVisitor {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of context.getDocument().definitions)
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);

  const measure = (
    set: SelectionSetNode,
    depth: number,
    seen: Set<string>,
  ): { depth: number; cost: number } => {
    let deepest = depth;
    let cost = 0;
    for (const s of set.selections) {
      let inner: SelectionSetNode | undefined;
      let add = 0;
      let level = depth;
      if (s.kind === Kind.FIELD) {
        add = FIELD_COSTS[s.name.value] ?? 1;
        inner = s.selectionSet;
        level = depth + 1;
        deepest = Math.max(deepest, level);
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        inner = s.selectionSet;
      } else {
        const name = s.name.value;
        if (seen.has(name)) continue;
        inner = fragments.get(name)?.selectionSet;
        seen = new Set([...seen, name]);
      }
      cost += add;
      if (inner) {
        const below = measure(inner, level, seen);
        deepest = Math.max(deepest, below.depth);
        cost += below.cost;
      }
    }
    return { depth: deepest, cost };
  };

  return {
    OperationDefinition(node) {
      const { depth, cost } = measure(node.selectionSet, 0, new Set());
      if (depth > MAX_DEPTH)
        context.reportError(
          new GraphQLError(`query is ${depth} levels deep; at most ${MAX_DEPTH} are allowed`, {
            nodes: [node],
            extensions: { classification: 'ValidationError', code: 'QUERY_TOO_DEEP' },
          }),
        );
      if (cost > MAX_COST)
        context.reportError(
          new GraphQLError(`query costs ${cost}; at most ${MAX_COST} is allowed`, {
            nodes: [node],
            extensions: { classification: 'ValidationError', code: 'QUERY_TOO_COSTLY' },
          }),
        );
    },
  };
}
