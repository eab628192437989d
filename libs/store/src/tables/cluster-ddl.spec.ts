import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChdbTransport } from '../chdb/chdb.transport.js';
import { ClickHouseStore } from '../clickhouse.store.js';
import { ClusterRehearsal } from '../testing/index.js';
import { addColumnSql, objectTableSql } from '../custom-columns.sql.js';
import { redactCustomers } from '../redaction.js';
import type { ClickHouseTransport } from '../clickhouse-transport.js';
import { ACCOUNT_TABLES, RETAINED_TABLES, accountTables } from './account-tables.js';
import { shardLocalJoins } from './distributed-reads.js';
import { mergeSettings, mutationTarget, retentionTtl, SINGLE_NODE, type StoreLayout } from './table.js';

const CLUSTER: StoreLayout = { cluster: 'cdp' };
const DB = 'cdp_a1';

/**
 * No ClickHouse server (let alone a cluster) runs here, so cluster mode is proven as far as this
 * machine allows: every statement the store would run on a cluster is parsed by the engine's own
 * parser (chDB's `formatQuery`, which throws on a syntax error), and the parsed form is checked for
 * what makes it a cluster statement. Running them needs infra/clickhouse-cluster (docs/operations.md).
 */
describe('cluster DDL, checked by the engine parser', () => {
  let transport: ChdbTransport;
  beforeAll(() => {
    transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-cluster-ddl-')));
  });
  afterAll(() => transport.close());

  async function parsed(sql: string): Promise<string> {
    const [row] = await transport.query<{ f: string }>('SELECT formatQuery({q:String}) AS f', { q: sql });
    return row!.f;
  }

  const statements = accountTables(DB, CLUSTER);

  it('rejects what is not SQL (the check can fail)', async () => {
    await expect(parsed('CREATE TABLE x ON CLUSTER c (a String')).rejects.toThrow(/Syntax error/);
  });

  it('parses every statement an account makes on a cluster, each ON CLUSTER', async () => {
    expect(statements.length).toBeGreaterThan(ACCOUNT_TABLES.length * 2);
    for (const sql of statements) expect(await parsed(sql)).toContain('ON CLUSTER cdp');
  });

  it('makes each table Replicated on every node with the shard/replica macros, under a Distributed one', async () => {
    const all = await Promise.all(accountTables(DB, CLUSTER).map(parsed));
    for (const table of ACCOUNT_TABLES) {
      const local = all.find((s) => s.startsWith(`CREATE TABLE IF NOT EXISTS ${DB}.${table.name}_local `));
      expect(local).toMatch(
        /ENGINE = Replicated\w*MergeTree\('\/clickhouse\/tables\/\{shard\}\/\{database\}\/\{table\}', '\{replica\}'/,
      );
      expect(local).toContain('replicated_deduplication_window = 10000');
      if (table.partitionBy) expect(local).toContain(`PARTITION BY toYYYYMM(${table.partitionBy})`);
      // Merge settings on the replicated table, and brought to an older one on every node.
      for (const setting of mergeSettings(table)) {
        expect(local).toContain(setting);
        const alters = all.filter((s) =>
          s.startsWith(`ALTER TABLE ${DB}.${table.name}_local ON CLUSTER cdp`),
        );
        expect(alters.some((s) => s.includes(`MODIFY SETTING ${setting}`))).toBe(true);
      }
      const distributed = all.find((s) => s.startsWith(`CREATE TABLE IF NOT EXISTS ${DB}.${table.name} `));
      expect(distributed).toContain(
        `ENGINE = Distributed(cdp, ${DB}, ${table.name}_local, cityHash64(${table.shardBy!.join(', ')}))`,
      );
    }
    // The version column stays the Replacing engine's argument, after the replica's.
    expect(all.join('\n')).toContain(
      "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', version)",
    );
  });

  it("shards every customer table by the customer, so one customer's rows stay on one shard", () => {
    const byCustomer = ACCOUNT_TABLES.filter((t) => t.shardBy?.join() === 'svc_id');
    expect(byCustomer.map((t) => t.name).sort()).toEqual(
      ['consent_history', 'customers', 'events', 'identity_conflicts', 'identity_links', 'line_items'].sort(),
    );
  });

  it('parses custom-field ALTERs, object tables and retention mutations on the cluster', async () => {
    const more = [
      ...addColumnSql(DB, 'events', { name: 'loyalty', type: 'number' }, CLUSTER),
      ...objectTableSql(
        DB,
        'stores',
        [
          { name: 'store_id', type: 'string', primary: true },
          { name: 'city', type: 'string' },
        ],
        CLUSTER,
      ),
      ...RETAINED_TABLES.flatMap((t) => [
        `ALTER TABLE ${mutationTarget(DB, t.name, CLUSTER)} MODIFY TTL ${retentionTtl(t, 90)}`,
        `ALTER TABLE ${mutationTarget(DB, t.name, CLUSTER)} REMOVE TTL`,
      ]),
    ];
    const out = await Promise.all(more.map(parsed));
    for (const sql of out) expect(sql).toContain('ON CLUSTER cdp');
    // A custom field reaches the replicated table and the Distributed one over it.
    const adds = out.filter((s) => /ADD COLUMN IF NOT EXISTS `?loyalty/.test(s));
    expect(adds.map((s) => /^ALTER TABLE (\S+)/.exec(s)?.[1])).toEqual([
      `${DB}.events_local`,
      `${DB}.events`,
    ]);
    expect(out.join('\n')).toContain(`Distributed(cdp, ${DB}, stores_local, cityHash64(store_id))`);
    expect(out.join('\n')).toContain(`ALTER TABLE ${DB}.events_local ON CLUSTER cdp`);
  });

  it('parses the redaction mutations on the cluster, each naming the replicated table on every shard', async () => {
    // The reads redaction makes first (the merged customers, each table's columns) run on this node's
    // single-node copy of the account; the mutations it would run on the cluster are parsed, not run.
    for (const sql of accountTables(DB, SINGLE_NODE)) await transport.exec(sql);
    const mutations: string[] = [];
    const onThisNode: ClickHouseTransport = Object.create(transport) as ClickHouseTransport;
    onThisNode.query = <T>(sql: string, params?: Record<string, unknown>) =>
      transport.query<T>(sql.replace(/(\w)_local\b/g, '$1'), params);
    onThisNode.exec = async (sql: string) => void mutations.push(await parsed(sql));
    await redactCustomers(onThisNode, DB, ['c-1', 'c-2'], CLUSTER);
    expect(mutations.length).toBeGreaterThan(3);
    for (const sql of mutations) {
      expect(sql).toMatch(new RegExp(`^ALTER TABLE ${DB}\\.\\w+_local ON CLUSTER cdp\\s+\\(?UPDATE`));
      // A Replicated table refuses a mutation with a subquery (order_changes' via orders) unless allowed.
      expect(sql).toContain('allow_nondeterministic_mutations = 1');
    }
  });

  it("runs the rebuilds' reads with every IN and JOIN GLOBAL or co-sharded", async () => {
    await new ClickHouseStore(transport).ensureAccount('a2');
    const rehearsal = new ClusterRehearsal(transport);
    const store = new ClickHouseStore(rehearsal.transport, { layout: CLUSTER });
    // A message begun and not committed: the profile read then has its unfinished branch to take.
    await store.begin('a2', ['m-unfinished']);
    const drain = async (rows: AsyncIterable<unknown>) => {
      for await (const row of rows) void row;
    };
    const graph = store.identityGraph('a2');
    for (const read of [
      graph.links,
      graph.merges,
      store.currentProfiles('a2'),
      store.consentStates('a2'),
      store.identifierUpdates('a2'),
      store.orderChanges('a2'),
      store.optOutPool('a2'),
    ])
      await drain(read);
    await store.products('a2', ['p1']);
    expect(rehearsal.statements.some((s) => s.includes('GLOBAL IN'))).toBe(true);
    expect(rehearsal.misplacedJoins()).toEqual([]);
    for (const sql of rehearsal.clusterStatements) expect(sql).toContain('ON CLUSTER cdp');
  });

  it('names a subquery IN or JOIN that is neither GLOBAL nor marked co-sharded', () => {
    expect(
      shardLocalJoins('SELECT a FROM t WHERE (a IN (SELECT a FROM u)) AND (b NOT IN (SELECT b FROM v))'),
    ).toHaveLength(2);
    expect(
      shardLocalJoins('SELECT * FROM t AS x LEFT JOIN u AS y ON x.a = y.a ARRAY JOIN y.list AS z'),
    ).toHaveLength(1);
    expect(
      shardLocalJoins(
        'SELECT * FROM t AS x GLOBAL INNER JOIN u AS y ON x.a = y.a LEFT ARRAY JOIN z WHERE (a GLOBAL NOT IN (SELECT 1)) AND (b IN (1, 2)) AND (c IN {ids:Array(String)})',
      ),
    ).toEqual([]);
  });
});
