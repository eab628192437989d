import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChdbTransport } from './chdb/chdb.transport.js';
import { ClickHouseStore } from './clickhouse.store.js';
import { orderChangesSql, sliceCount } from './rebuild-reads.js';
import { databaseName } from './tables/account-tables.js';

const DAY_MS = 86_400_000;
/** The one slice of a read not split. */
const WHOLE = { slice_count: 1, slice_index: 0 };

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
    const plan = await granules(orderChangesSql(db, since), { unfinished: [], since, ...WHOLE });
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
    const whole = await granules(orderChangesSql(db), { unfinished: [], ...WHOLE });
    const all = /PrimaryKey[\s\S]*?Granules: (\d+)\/(\d+)/.exec(whole);
    expect(all && Number(all[1])).toBe(of);
  });
});

/**
 * A rebuild reads each table in slices (by a CRC32 of the key) and the merges in pages: read in slices of
 * 7 rows, every read gives what one whole read gives (the merges in the same order too).
 */
describe('rebuild reads in slices', () => {
  const account = 'slices';
  let transport: ChdbTransport;
  let whole: ClickHouseStore;
  let sliced: ClickHouseStore;

  beforeAll(async () => {
    transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-rebuild-slices-')));
    whole = new ClickHouseStore(transport);
    sliced = new ClickHouseStore(transport, { rebuildSliceRows: 7 });
    // 300 customers, each with an email and a vuid, some vuids linked twice (a later, losing owner),
    // lowered born keys, merges with repeated seq values and one duplicated row, several snapshots per
    // customer, consent, identifier updates and opt-outs; plus rows of an unfinished message.
    const statements = [
      `INSERT INTO {db}.identity_links (kind, value, svc_id, born, msg_id, created_at)
       SELECT ['email', 'vuid'][1 + number % 2], concat('v', toString(intDiv(number, 2) % 250)),
              concat('c', toString(intDiv(number, 2))), concat('a', toString(number)), concat('m', toString(number)),
              toDateTime('2026-01-01 00:00:00') + number
       FROM numbers(600)`,
      `INSERT INTO {db}.identity_links (kind, value, svc_id, born, msg_id, created_at)
       SELECT '', '', concat('c', toString(number % 40)), concat('a0', toString(number)), concat('mb', toString(number)),
              toDateTime('2026-01-02 00:00:00') + number FROM numbers(60)`,
      `INSERT INTO {db}.identity_merges (loser, survivor, seq, msg_id, created_at)
       SELECT concat('c', toString(100 + number)), concat('c', toString(number % 50)), intDiv(number, 3),
              concat('mm', toString(number)), toDateTime('2026-01-03 00:00:00') FROM numbers(45)`,
      `INSERT INTO {db}.identity_merges (loser, survivor, seq, msg_id, created_at)
       VALUES ('c100', 'c0', 0, 'mm0', '2026-01-03 00:00:00')`,
      `INSERT INTO {db}.customers (svc_id, version, msg_id, updated_at, merged_into, email)
       SELECT concat('c', toString(number % 300)), intDiv(number, 300), concat('mc', toString(number)),
              toDateTime('2026-01-04 00:00:00') + number, if(number % 300 BETWEEN 100 AND 144, 'c0', NULL),
              concat('e', toString(number)) FROM numbers(900)`,
      `INSERT INTO {db}.consent_history (svc_id, list_id, subscribed, version, at, identifier_kind, identifier_value)
       SELECT concat('c', toString(number % 40)), concat('l', toString(number % 3)), number % 2 = 0, number, number, '', ''
       FROM numbers(500)`,
      `INSERT INTO {db}.identifier_updates (field, value, version, type, change, svc_id, api_key, msg_id, changed_at)
       SELECT 'email', concat('v', toString(number % 70)), intDiv(number, 70), 'consent', concat('{"n":', toString(number), '}'),
              '', '', concat('mi', toString(number)), toDateTime('2026-01-05 00:00:00') FROM numbers(400)`,
      `INSERT INTO {db}.optout_pool (kind, value, msg_id, created_at)
       SELECT 'email', concat('v', toString(number % 90)), concat('mo', toString(number)), toDateTime('2026-01-06 00:00:00')
       FROM numbers(200)`,
      `INSERT INTO {db}.identity_links (kind, value, svc_id, born, msg_id, created_at)
       VALUES ('email', 'unfinished', 'c999', 'a9', 'm-open', '2026-01-07 00:00:00')`,
    ];
    for (const sql of statements) await whole.execute(account, sql);
    await whole.begin(account, ['m-open']);
  });
  afterAll(() => transport.close());

  async function all<T>(rows: AsyncIterable<T>): Promise<T[]> {
    const out: T[] = [];
    for await (const row of rows) out.push(row);
    return out;
  }
  const sorted = <T>(rows: T[]) => rows.map((r) => JSON.stringify(r)).sort();

  it('the slice count is the least power of two up to 256 that keeps a slice near its size', () => {
    expect(sliceCount(0, 7)).toBe(1);
    expect(sliceCount(7, 7)).toBe(1);
    expect(sliceCount(8, 7)).toBe(2);
    expect(sliceCount(600, 7)).toBe(128);
    expect(sliceCount(10_000_000, 7)).toBe(256);
  });

  it('reads the identity graph, profiles, consent, identifier updates and opt-outs as one whole read does', async () => {
    const [a, b] = [whole.identityGraph(account), sliced.identityGraph(account)];
    const links = await all(a.links);
    expect(links.length).toBe(500); // 250 emails and 250 vuids; the unfinished message's link left out
    expect(sorted(await all(b.links))).toEqual(sorted(links));
    expect(sorted(await all(b.borns))).toEqual(sorted(await all(a.borns)));
    // Merges in the order they happened, across pages: seq, then loser; the duplicate read once.
    const merges = await all(a.merges);
    expect(merges.length).toBe(45);
    expect(await all(b.merges)).toEqual(merges);

    const profiles = await all(whole.currentProfiles(account));
    expect(profiles.length).toBe(255); // 300 customers less the 45 merged away
    expect(sorted(await all(sliced.currentProfiles(account)))).toEqual(sorted(profiles));
    const consent = await all(whole.consentStates(account));
    expect(consent.length).toBe(120);
    expect(sorted(await all(sliced.consentStates(account)))).toEqual(sorted(consent));
    // Each identifier's changes together and in version order, within its slice.
    const updates = await all(sliced.identifierUpdates(account));
    expect(sorted(updates)).toEqual(sorted(await all(whole.identifierUpdates(account))));
    const byIdentifier = new Map<string, number[]>();
    for (const u of updates) byIdentifier.set(u.value, [...(byIdentifier.get(u.value) ?? []), u.version]);
    for (const versions of byIdentifier.values())
      expect(versions).toEqual([...versions].sort((x, y) => x - y));
    expect(sorted(await all(sliced.optOutPool(account)))).toEqual(
      sorted(await all(whole.optOutPool(account))),
    );
  });
});
