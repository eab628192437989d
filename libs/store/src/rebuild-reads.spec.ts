import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChdbTransport } from './chdb/chdb.transport.js';
import { ClickHouseStore } from './clickhouse.store.js';
import { orderChangesSql } from './rebuild-reads.js';
import { databaseName } from './tables/account-tables.js';

const DAY_MS = 86_400_000;

/** The order state's rebuild on chDB, bounded by the orders' retention. */
describe('the order changes a rebuild reads', () => {
  const account = 'orders';
  const db = databaseName(account);
  let transport: ChdbTransport;
  let store: ClickHouseStore;

  beforeAll(async () => {
    transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-rebuild-reads-')));
    store = new ClickHouseStore(transport);
    // 20,000 orders of ten changes each, last changed two years ago; o5 and o15000 changed yesterday.
    await store.execute(
      account,
      `INSERT INTO {db}.order_changes (change_id, msg_id, order_id, seq, kind, action, ts_ms, svc_id, fields)
       SELECT concat('ch', toString(number)), concat('m', toString(number)), concat('o', toString(intDiv(number, 10))),
              number % 10, 'event', 'purchase', 0, 'c1', '{}'
       FROM numbers(200000)`,
    );
    await store.execute(
      account,
      `INSERT INTO {db}.orders (order_id, version, msg_id, updated_at, svc_id, purchased, subtotal, total, revenue,
                                counts_for_lifecycle, cancelled, partial, adjustments)
       SELECT concat('o', toString(number)), 10, 'm', now64(3) - toIntervalDay(if(number IN (5, 15000), 1, 730)),
              'c1', true, 1, 1, 1, true, false, false, 0
       FROM numbers(20000)`,
    );
    // An update kept pending (seq 0) for an order that has no summary yet, committed recently.
    await store.execute(
      account,
      `INSERT INTO {db}.order_changes (change_id, msg_id, order_id, seq, kind, action, ts_ms, svc_id, fields)
       VALUES ('pending', 'm-pending', 'o-new', 0, 'entity', 'update', 0, NULL, '{}')`,
    );
    await store.begin(account, ['m-pending']);
    await store.commit(account, ['m-pending']);
  });
  afterAll(() => transport.close());

  /** The plan's granule counts (read/of) per table read: the key's, and each skip index's after it. */
  async function granules(sql: string, params: Record<string, unknown>): Promise<string> {
    const rows = await transport.query<{ explain: string }>(`EXPLAIN indexes = 1 ${sql}`, params);
    return rows.map((r) => r.explain).join('\n');
  }

  it("reads only the changes of orders changed within the retention (EXPLAIN indexes = 1: the key's granules), and the pending updates of recent messages", async () => {
    const since = Date.now() - 30 * DAY_MS;
    const plan = await granules(orderChangesSql(db, since), { unfinished: [], since });
    const key = /Keys:[\s│]+order_id[\s\S]*?Granules: (\d+)\/(\d+)/.exec(plan);
    expect(key).not.toBeNull();
    const [read, of] = [Number(key![1]), Number(key![2])];
    expect(of).toBeGreaterThan(20);
    expect(read).toBeLessThanOrEqual(2);
    // The pending updates' read goes by the message index: the blocks holding the commit log's messages.
    const pending = [...plan.matchAll(/Name: msg_idx[\s\S]*?Granules: (\d+)\/(\d+)/g)].at(-1);
    expect(Number(pending![2])).toBe(of);
    expect(Number(pending![1])).toBeLessThanOrEqual(8);

    const changes: string[] = [];
    for await (const c of store.orderChanges(account, since)) changes.push(`${c.order_id}/${c.seq}`);
    expect(changes).toHaveLength(21);
    expect(new Set(changes.map((c) => c.split('/')[0]))).toEqual(new Set(['o5', 'o15000', 'o-new']));
    expect(changes).toContain('o-new/0');
    // Without a retention (orders kept forever) every granule is read.
    const whole = await granules(orderChangesSql(db), { unfinished: [] });
    const all = /PrimaryKey[\s\S]*?Granules: (\d+)\/(\d+)/.exec(whole);
    expect(all && Number(all[1])).toBe(of);
  });
});
