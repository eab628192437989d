import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toStoreTime } from '@cdp/domain';
import type { StoreBatch } from '../analytic-store.port.js';
import { ChdbTransport } from '../chdb/chdb.transport.js';
import { ClickHouseStore, UNWRITTEN_DB } from '../clickhouse.store.js';
import { databaseName } from './account-tables.js';

const DAY = 86_400_000;

/**
 * Partitions, retention and lazy tables on chDB. Retention is a TTL the engine evaluates against its own
 * clock: the test controls time by writing rows whose timestamps it places relative to now, then makes
 * the engine apply the TTL at once (`OPTIMIZE … FINAL`) instead of at its next merge.
 */
describe('store partitions, retention and lazy tables on chDB', () => {
  let transport: ChdbTransport;
  /** The events retention the operator set, per account (what the admin API stores). */
  const retention = new Map<string, number | null>();
  let store: ClickHouseStore;
  beforeAll(() => {
    transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-partitions-')));
    store = new ClickHouseStore(transport, { retention: (a) => Promise.resolve(retention.get(a) ?? null) });
  });
  afterAll(() => transport.close());

  /** One message's batch: an event (and a line item) per timestamp, of one customer. */
  function batch(msg: string, times: readonly number[]): StoreBatch {
    return {
      identityLinks: [],
      merges: [],
      conflicts: [],
      customers: [],
      events: times.map((t, i) => ({
        event_id: `${msg}-${i}`,
        msg_id: msg,
        svc_id: 'c1',
        ts: toStoreTime(t),
        received_at: toStoreTime(Date.now()),
        type: 'order',
        action: 'purchase',
        channel: 'web',
        identifiers: {},
        data: {},
        order: null,
      })),
      lineItems: times.map((t, i) => ({
        line_item_id: `${msg}-${i}`,
        event_id: `${msg}-${i}`,
        msg_id: msg,
        order_id: `o-${msg}-${i}`,
        svc_id: 'c1',
        ts: toStoreTime(t),
        event: 'Order Line Item Purchase',
        action: 'purchase',
        product_id: 'p1',
        sku: null,
        price: 1,
        quantity: 1,
        discount: null,
        subtotal: 1,
      })),
    };
  }

  const count = async (account: string, table: string, where = '1') =>
    Number(
      (await store.query<{ n: number }>(account, `SELECT count() AS n FROM {db}.${table} WHERE ${where}`))[0]!
        .n,
    );

  const exists = async (db: string) =>
    Number(
      (
        await transport.query<{ n: number }>(
          'SELECT count() AS n FROM system.databases WHERE name = {db:String}',
          {
            db,
          },
        )
      )[0]!.n,
    ) > 0;

  it('partition time-ordered tables by month: one partition per month written', async () => {
    const months = [Date.UTC(2026, 0, 15), Date.UTC(2026, 1, 15), Date.UTC(2026, 2, 15)];
    await store.write('parts', batch('m1', [...months, months[0]! + DAY]), false);
    const partitions = await transport.query<{ table: string; partition: string }>(
      `SELECT DISTINCT table, partition FROM system.parts
       WHERE database = {db:String} AND active AND table IN ('events', 'line_items') ORDER BY table, partition`,
      { db: databaseName('parts') },
    );
    expect(partitions).toEqual(
      ['events', 'line_items'].flatMap((table) =>
        ['202601', '202602', '202603'].map((partition) => ({ table, partition })),
      ),
    );
  });

  it('read only the months a time-bounded read asks for (EXPLAIN indexes = 1)', async () => {
    const months = [Date.UTC(2026, 0, 15), Date.UTC(2026, 1, 15), Date.UTC(2026, 2, 15)];
    await store.write('pruned', batch('m1', months), false);
    // The month-bounded read an export or recommendations refresh makes: one month of three.
    const plan = (
      await store.query<{ explain: string }>(
        'pruned',
        `EXPLAIN indexes = 1 SELECT event_id, svc_id, ts FROM {db}.events WHERE ts >= '2026-03-01 00:00:00' AND ts < '2026-04-01 00:00:00'`,
      )
    ).map((r) => r.explain);
    const text = plan.join('\n');
    // The partition key's min-max index selects the parts (one per month here) the bound can hold.
    expect(text).toContain('toYYYYMM(ts)');
    const partition = /Min-Max[\s\S]*?Parts: (\d+)\/(\d+)/.exec(text);
    expect(partition).not.toBeNull();
    expect([Number(partition![1]), Number(partition![2])]).toEqual([1, 3]);
    expect(await count('pruned', 'events', "ts >= '2026-03-01 00:00:00'")).toBe(1);
  });

  it("drop events past the account's retention, and keep everything without one", async () => {
    const now = Date.now();
    const old = [now - 400 * DAY, now - 95 * DAY];
    const recent = [now - 10 * DAY, now - DAY];
    retention.set('kept', 90);
    await store.write('kept', batch('m1', [...old, ...recent]), false);
    await store.write('forever', batch('m1', [...old, ...recent]), false);
    for (const account of ['kept', 'forever'])
      for (const table of ['events', 'line_items'])
        await store.execute(account, `OPTIMIZE TABLE {db}.${table} FINAL`);

    expect(await count('kept', 'events')).toBe(2);
    expect(await count('kept', 'line_items')).toBe(2);
    expect(await count('kept', 'events', `ts < now() - INTERVAL 90 DAY`)).toBe(0);
    expect(await count('forever', 'events')).toBe(4);
    const [ttl] = await transport.query<{ engine_full: string }>(
      `SELECT engine_full FROM system.tables WHERE database = {db:String} AND name = 'events'`,
      { db: databaseName('kept') },
    );
    expect(ttl!.engine_full).toContain('TTL toDateTime(ts) + toIntervalDay(90)');
  });

  it('apply a changed retention at the next write once the setting is read again', async () => {
    const now = Date.now();
    retention.set('changed', null);
    const reopened = () =>
      new ClickHouseStore(transport, { retention: (a) => Promise.resolve(retention.get(a) ?? null) });
    await reopened().write('changed', batch('m1', [now - 40 * DAY, now - DAY]), false);
    retention.set('changed', 30);
    // A new store reads the setting on its first write (a running one within RETENTION_CHECK_MS).
    await reopened().write('changed', batch('m2', []), false);
    await store.execute('changed', 'OPTIMIZE TABLE {db}.events FINAL');
    expect(await count('changed', 'events')).toBe(1);

    retention.set('changed', null);
    await reopened().write('changed', batch('m3', [now - 40 * DAY]), false);
    await store.execute('changed', 'OPTIMIZE TABLE {db}.events FINAL');
    expect(await count('changed', 'events')).toBe(2);
  });

  it('write on when the retention setting cannot be read (its tables keep the TTL they have)', async () => {
    const away = new ClickHouseStore(transport, {
      retention: () => Promise.reject(new Error('metadata store unreachable')),
    });
    await away.write('away', batch('m1', [Date.now() - 400 * DAY]), false);
    expect(await count('away', 'events')).toBe(1);
  });

  it("create an account's tables at its first write; before it, reads answer empty", async () => {
    const db = databaseName('lazy');
    expect(await count('lazy', 'events')).toBe(0);
    expect(await store.query('lazy', 'SELECT * FROM {db}.customers FINAL')).toEqual([]);
    expect(await store.unfinishedMessages('lazy')).toEqual([]);
    const profiles = [];
    for await (const p of store.currentProfiles('lazy')) profiles.push(p);
    expect(profiles).toEqual([]);
    expect(await exists(db)).toBe(false);
    expect(await exists(UNWRITTEN_DB)).toBe(true);

    await store.write('lazy', batch('m1', [Date.now()]), false);
    expect(await exists(db)).toBe(true);
    expect(await count('lazy', 'events')).toBe(1);
    // Nothing a never-written account's reads ran against holds a row.
    expect(await transport.query(`SELECT * FROM ${UNWRITTEN_DB}.events`)).toEqual([]);
  });

  it('open an account whose tables are up to date without DDL; one missing a column gets it', async () => {
    await store.write('opened', batch('m1', [Date.now()]), false);
    const ran: string[] = [];
    const counting = Object.assign(Object.create(transport) as ChdbTransport, {
      exec: (sql: string) => {
        ran.push(sql);
        return transport.exec(sql);
      },
    });
    await new ClickHouseStore(counting).ensureAccount('opened');
    expect(ran).toEqual([]);

    await transport.exec(`ALTER TABLE ${databaseName('opened')}.customers DROP COLUMN redacted`);
    await new ClickHouseStore(counting).ensureAccount('opened');
    expect(ran.some((sql) => sql.includes('customers ADD COLUMN IF NOT EXISTS redacted'))).toBe(true);
  });

  it('keep an account made before partitions working: unpartitioned, retention by TTL all the same', async () => {
    const before = readFileSync(
      join('libs', 'store', 'src', 'tables', 'fixtures', 'account-ddl-before-declarations.sql'),
      'utf8',
    );
    const db = databaseName('olden');
    for (const statement of before.split('\n;;\n')) await transport.exec(statement.replaceAll('{db}', db));
    retention.set('olden', 30);
    const now = Date.now();
    await store.write('olden', batch('m1', [now - 60 * DAY, now]), false);
    await store.execute('olden', 'OPTIMIZE TABLE {db}.events FINAL');
    expect(await count('olden', 'events')).toBe(1);
    const [events] = await transport.query<{ partition_key: string }>(
      `SELECT partition_key FROM system.tables WHERE database = {db:String} AND name = 'events'`,
      { db },
    );
    expect(events!.partition_key).toBe('');
  });
});
