import type { ClickHouseTransport } from '../clickhouse-transport.js';
import { CO_SHARDED_SETTING, shardLocalJoins } from '../tables/distributed-reads.js';

export { databaseShape } from './database-shape.js';

/** DDL and mutations: on a cluster they go to every node (ON CLUSTER); here they are only parsed. */
const CLUSTER_STATEMENT = /^\s*(CREATE|ALTER|DROP|OPTIMIZE|RENAME|EXCHANGE|TRUNCATE)\b/i;

/**
 * A store in cluster mode rehearsed on one chDB node, since no ClickHouse cluster runs here. Give a
 * ClickHouseStore with a cluster layout `transport`: every DDL statement and mutation it makes is
 * parsed by the engine's own parser and kept in `clusterStatements`, not run; every other statement
 * (reads, `INSERT … SELECT`) is parsed, kept in `statements`, and run against this node's single-node
 * copy of the account (which the test creates first), the cluster's `<table>_local` read as `<table>`.
 * What a cluster adds — shards, replicas, Distributed reads — is not exercised; what it refuses that
 * one node accepts (a subquery IN or JOIN that is neither GLOBAL nor co-sharded) is what
 * `misplacedJoins` lists.
 */
export class ClusterRehearsal {
  /** DDL and mutations as the engine's formatter writes them. */
  readonly clusterStatements: string[] = [];
  /** Reads and `INSERT … SELECT`s, as the engine's formatter writes them (one line each). */
  readonly statements: string[] = [];
  readonly transport: ClickHouseTransport;

  constructor(private readonly node: ClickHouseTransport) {
    const onNode = (sql: string) => sql.replace(/(\w)_local\b/g, '$1');
    const rehearsal = Object.create(node) as ClickHouseTransport;
    rehearsal.exec = async (sql: string) => {
      if (CLUSTER_STATEMENT.test(sql)) {
        this.clusterStatements.push(await this.parse(sql));
        return;
      }
      this.statements.push(await this.parse(sql));
      await node.exec(onNode(sql));
    };
    rehearsal.query = async <T>(sql: string, params?: Record<string, unknown>) => {
      this.statements.push(await this.parse(sql));
      return node.query<T>(onNode(sql), params);
    };
    const record = (sql: string) => this.parse(sql).then((f) => void this.statements.push(f));
    rehearsal.stream = async function* <T>(sql: string, params?: Record<string, unknown>) {
      await record(sql);
      yield* node.stream<T>(onNode(sql), params);
    };
    rehearsal.writeParquet = async (sql: string, params: Record<string, unknown>, path: string) => {
      await record(sql);
      await node.writeParquet(onNode(sql), params, path);
    };
    this.transport = rehearsal;
  }

  /** The statement as the engine's parser reads it, on one line; a syntax error throws. */
  async parse(sql: string): Promise<string> {
    const [row] = await this.node.query<{ f: string }>('SELECT formatQuerySingleLine({q:String}) AS f', {
      q: sql,
    });
    return row!.f;
  }

  /**
   * The statements run with a subquery IN or JOIN a cluster would refuse: neither GLOBAL nor in a
   * statement marked co-sharded (whose co-sharding `coShardedIn` checked when its SQL was built).
   */
  misplacedJoins(): string[] {
    return this.statements.flatMap((sql) =>
      sql.includes(CO_SHARDED_SETTING)
        ? []
        : shardLocalJoins(sql).map((join) => `${join}  ‹in› ${sql.slice(0, 200)}…`),
    );
  }
}
