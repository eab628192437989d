import type { TableDeclaration } from './table.js';

/**
 * How a read joins two tables on a cluster (docs/architecture.md "Joins on a cluster"). Every declared
 * table is a Distributed table there, and a query over one is run on every shard against the shard's
 * own rows. An `IN (SELECT …)` or a `JOIN` inside it whose subquery reads another Distributed table is
 * refused by the engine (`distributed_product_mode = 'deny'`, its default) unless it is either:
 *
 * - `GLOBAL IN` / `GLOBAL JOIN`: the subquery runs once, on the node asked, and its result is sent to
 *   every shard. Always right, whatever the tables' shard keys; what it costs is the subquery's rows
 *   sent to each shard. On one node it is an ordinary IN / JOIN.
 * - co-sharded: both tables are sharded by the compared column, so the rows a shard's own rows match
 *   are on that shard. The statement carries CO_SHARDED_SETTING, which makes each shard read the
 *   subquery's table locally (its `<table>_local`); nothing travels. Written with `coShardedIn`, which
 *   checks the shard keys when the SQL is built.
 *
 * Subqueries in FROM and scalar subqueries are not affected: the node asked runs them whole.
 */
export const CO_SHARDED_SETTING = "distributed_product_mode = 'local'";

/**
 * `IN` (or `NOT IN`) between `outer.outerColumn` and a subquery over `inner.innerColumn`, when both
 * tables are sharded by exactly that column: the rows a shard holds match only rows of the same shard,
 * so the subquery is read where it is (the statement needs CO_SHARDED_SETTING). Throws when the tables
 * are not sharded so, as the declaration of the statement is loaded: a shard key changed later cannot
 * leave a shard-local join behind silently.
 */
export function coShardedIn(
  outer: TableDeclaration,
  outerColumn: string,
  inner: TableDeclaration,
  innerColumn: string,
  not = false,
): string {
  const by = (t: TableDeclaration) => (t.shardBy ?? []).join(', ');
  if (by(outer) !== outerColumn || by(inner) !== innerColumn)
    throw new Error(
      `${outer.name}.${outerColumn} IN ${inner.name}.${innerColumn} is not co-sharded (${by(outer)} / ${by(inner)})`,
    );
  return not ? 'NOT IN' : 'IN';
}

/** A subquery IN or a JOIN in a statement, as the engine's formatter writes them. */
const SUBQUERY_JOIN =
  /(GLOBAL )?((?:NOT )?IN \(+SELECT|(?:(?:LEFT|RIGHT|INNER|FULL|CROSS|OUTER|ANY|ALL|SEMI|ANTI|ASOF) )*(?<!ARRAY )JOIN )/g;

/**
 * The subquery INs and JOINs of a statement that a cluster would run on each shard with its own rows
 * (not GLOBAL), given the statement as chDB's `formatQuerySingleLine` writes it. Each must be
 * co-sharded, and the statement must carry CO_SHARDED_SETTING; any other is a mistake on a cluster.
 * `ARRAY JOIN` is not a join of tables and is not listed.
 */
export function shardLocalJoins(formatted: string): string[] {
  const found: string[] = [];
  for (const match of formatted.matchAll(SUBQUERY_JOIN)) {
    if (match[1]) continue;
    const at = match.index;
    found.push(formatted.slice(Math.max(0, at - 40), at + match[0].length + 40));
  }
  return found;
}
