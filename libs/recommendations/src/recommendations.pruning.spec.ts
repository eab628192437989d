import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouseStore } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { inline } from './recommendation-tables.js';
import { BEST_SELLERS_SQL, FRESH_PURCHASES_SQL } from './recommendation.query.js';
import { DERIVE_GENERATION, REC_TABLES } from './recommendations.sql.js';

/** `Parts: a/b` or `Granules: a/b` under the named index of an `EXPLAIN indexes = 1` plan. */
function selected(plan: string, index: RegExp, what: 'Parts' | 'Granules'): [number, number] {
  const found = new RegExp(`${index.source}[\\s\\S]*?${what}: (\\d+)/(\\d+)`).exec(plan);
  if (!found) throw new Error(`no ${what} under ${index.source} in:\n${plan}`);
  return [Number(found[1]), Number(found[2])];
}

/**
 * What the recommendations read of an account, on chDB: only what their windows and generations need,
 * shown by the engine's own plan (`EXPLAIN indexes = 1`).
 */
describe('recommendation reads, bounded (EXPLAIN indexes = 1 on chDB)', () => {
  const account = 'shop';
  let transport: ChdbTransport;
  let store: ClickHouseStore;
  const explain = async (sql: string) =>
    (await store.query<{ explain: string }>(account, `EXPLAIN indexes = 1 ${sql}`))
      .map((r) => r.explain)
      .join('\n');

  beforeAll(async () => {
    transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-rec-pruning-')));
    store = new ClickHouseStore(transport);
    await store.ensureTables(account, REC_TABLES);
  });
  afterAll(() => transport.close());

  it("a refresh generation reads only its messages' granules of the events (the msg_id bloom filter)", async () => {
    // 200,000 product views of older messages, and the generation's one message among them.
    await store.execute(
      account,
      `INSERT INTO {db}.events (event_id, msg_id, svc_id, ts, received_at, type, action, channel, product_id)
       SELECT concat('e', toString(number)), concat('old-', toString(intDiv(number, 1000))),
              concat('c', toString(number % 5000)), now64(3) - toIntervalSecond(number), now64(3),
              'product', 'detail', 'web', concat('p', toString(number % 300))
       FROM numbers(200000)`,
    );
    await store.execute(
      account,
      `INSERT INTO {db}.rec_messages (msg_id, gen, commit_at) VALUES ('old-7', 1, now64(3))`,
    );
    const interactions = DERIVE_GENERATION.find((s) => s.name === 'interactions')!.sql;
    const read = inline(interactions, { gen: 1 }).replace(/^INSERT INTO [^\n]*\n/, '');
    const plan = await explain(read);
    const [granules, of] = selected(plan, /Name: msg_idx/, 'Granules');
    // The message's 1,000 events lie in a few granules of the 25 (the index's blocks are 4 granules).
    expect(of).toBeGreaterThan(20);
    expect(granules).toBeLessThanOrEqual(8);
    expect(await store.query(account, read)).toHaveLength(1000);
  });

  it('the fresh purchases read only the months of the 180-day window (partitions)', async () => {
    // A purchase a month, for two years back.
    const months = Array.from({ length: 24 }, (_, i) => i);
    await store.execute(
      account,
      `INSERT INTO {db}.line_items (line_item_id, event_id, msg_id, order_id, svc_id, ts, event, action, product_id)
       VALUES ${months.map((m) => `('li${m}', 'ev${m}', 'msg${m}', 'o${m}', 'c1', now64(3) - toIntervalMonth(${m}), 'order', 'purchase', 'p1')`).join(', ')}`,
    );
    const plan = await explain(inline(FRESH_PURCHASES_SQL, { since: 0, gen: 0 }));
    const [parts, of] = selected(plan, /Min-Max/, 'Parts');
    expect(of).toBe(24);
    // 180 days: this month and the six before it at most.
    expect(parts).toBeLessThanOrEqual(7);
  });

  it("the best sellers read only the last 7 days' hours of sales (primary key)", async () => {
    // Hourly sales of 5 products for six years back.
    await store.execute(
      account,
      `INSERT INTO {db}.rec_sales (hour, product_id, units, revenue)
       SELECT toStartOfHour(now() - toIntervalHour(intDiv(number, 5))), concat('p', toString(number % 5)), 1, 10
       FROM numbers(${6 * 365 * 24 * 5})`,
    );
    const plan = await explain(BEST_SELLERS_SQL);
    const [granules, of] = selected(plan, /PrimaryKey/, 'Granules');
    expect(of).toBeGreaterThan(20);
    expect(granules).toBeLessThanOrEqual(2);
  });
});
