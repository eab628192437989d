import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouseStore, CO_SHARDED_SETTING, EVENTS, INGEST_COMMITS, coShardedIn } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { ClusterRehearsal } from '@cdp/store/testing';
import { eventually } from '../../../test/support/eventually.js';
import { RecommendationsRefresh } from './recommendations-refresh.js';
import { REC_MESSAGES, REC_TABLES } from './recommendations.sql.js';
import { StoreRecommender } from './store-recommender.js';
import { storeProducts, storePurchase } from './testing/stored-rows.js';

const DB = 'cdp_shop';

/**
 * The recommendations of a store in cluster mode (`CLICKHOUSE_CLUSTER=cdp`), rehearsed on one chDB
 * node (ClusterRehearsal): a refresh and a recommendation run as they would on a cluster; their DDL is
 * parsed by the engine, their reads and derived inserts parsed and run on this node's tables.
 */
describe('recommendations on a cluster, rehearsed on chDB', () => {
  let transport: ChdbTransport;
  let rehearsal: ClusterRehearsal;
  let recommended: string[];

  beforeAll(async () => {
    transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-rec-cluster-')));
    // This node's single-node copy of the account, which the cluster-mode statements run against.
    const node = new ClickHouseStore(transport);
    await node.ensureTables('shop', REC_TABLES);
    await storeProducts(node, 'shop', ['laptop', 'mouse', 'pan', 'pot']);
    const day = new Date(Date.now() - 86_400_000).toISOString().replace('T', ' ').slice(0, 23);
    for (const [id, customer, products] of [
      ['m1', 'b1', ['laptop', 'mouse']],
      ['m2', 'b2', ['laptop', 'mouse']],
      ['m3', 'c1', ['pan', 'pot']],
    ] as const)
      await storePurchase(node, 'shop', {
        id,
        customer,
        products: [...products],
        ts: day,
        commitMs: Date.now(),
      });

    rehearsal = new ClusterRehearsal(transport);
    const clustered = new ClickHouseStore(rehearsal.transport, { layout: { cluster: 'cdp' } });
    expect(await new RecommendationsRefresh(clustered).refresh('shop')).toBe(3);
    const recommender = new StoreRecommender(clustered);
    const answer = await recommender.recommend({
      account: 'shop',
      customer: 'b3',
      productIds: ['laptop'],
      limit: 3,
      sort: undefined,
      order: 'desc',
      rules: {},
    });
    recommended = answer.map((p) => p.product_id);
    // The recommender reads the active customers' histories ahead, in the background.
    await eventually(() => rehearsal.statements.some((s) => s.includes('LIMIT 100000')));
  });
  afterAll(() => transport.close());

  it('answers from the tables it refreshed', () => {
    expect(recommended[0]).toBe('mouse');
  });

  it('creates the recommendation tables as the account tables: Replicated on every node, under Distributed ones', () => {
    for (const table of REC_TABLES) {
      const local = rehearsal.clusterStatements.find((s) =>
        s.startsWith(`CREATE TABLE IF NOT EXISTS ${DB}.${table.name}_local ON CLUSTER cdp`),
      );
      expect(local).toMatch(
        /ENGINE = Replicated\w*MergeTree\('\/clickhouse\/tables\/\{shard\}\/\{database\}\/\{table\}', '\{replica\}'/,
      );
      const distributed = rehearsal.clusterStatements.find((s) =>
        s.startsWith(`CREATE TABLE IF NOT EXISTS ${DB}.${table.name} ON CLUSTER cdp`),
      );
      expect(distributed).toContain(
        `ENGINE = Distributed(cdp, ${DB}, ${table.name}_local, cityHash64(${table.shardBy!.join(', ')}))`,
      );
    }
    // The sums and the related lists replace or add up within one shard: sharded by their product.
    expect(rehearsal.clusterStatements.join('\n')).toContain(
      "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', gen)",
    );
    for (const sql of rehearsal.clusterStatements) expect(sql).toContain('ON CLUSTER cdp');
  });

  it('runs no IN or JOIN a cluster would refuse: each is GLOBAL, or co-sharded', () => {
    expect(rehearsal.statements.length).toBeGreaterThan(15);
    expect(rehearsal.misplacedJoins()).toEqual([]);
    const global = rehearsal.statements.filter((s) => / GLOBAL (NOT )?IN | GLOBAL INNER JOIN /.test(s));
    const coSharded = rehearsal.statements.filter((s) => s.includes(CO_SHARDED_SETTING));
    // The generation's rows of events and line items, the changes' look-ups, the related lists' joins…
    expect(global.length).toBeGreaterThan(5);
    // …and the three reads whose two sides shard alike: messages taken (by message), the affinity pairs'
    // customers (by customer), the active customers without merged ones (by customer).
    expect(coSharded.map((s) => /^(INSERT INTO \S+|SELECT \S+ FROM \S+)/.exec(s)?.[1]).sort()).toEqual(
      [
        `INSERT INTO ${DB}.rec_affinities`,
        `INSERT INTO ${DB}.rec_messages`,
        `SELECT svc_id FROM ${DB}.rec_interactions`,
      ].sort(),
    );
  });

  it('refuses to call a join co-sharded when the shard keys differ', () => {
    expect(coShardedIn(INGEST_COMMITS, 'msg_id', REC_MESSAGES, 'msg_id')).toBe('IN');
    expect(() => coShardedIn(EVENTS, 'msg_id', REC_MESSAGES, 'msg_id')).toThrow(/not co-sharded/);
  });
});
