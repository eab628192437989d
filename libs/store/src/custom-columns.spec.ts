import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toStoreTime } from '@cdp/domain';
import type { StoreBatch } from './analytic-store.port.js';
import { ChdbTransport } from './chdb/chdb.transport.js';
import { ClickHouseStore } from './clickhouse.store.js';
import { currentObjectRowsSql, objectFieldAtColumn } from './custom-columns.sql.js';

/** Custom fields as typed columns and account objects' tables, on chDB (the SQL a server runs too). */
describe('custom columns and object tables', () => {
  let store: ClickHouseStore;
  beforeAll(() => {
    store = new ClickHouseStore(new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-custom-'))));
  });
  afterAll(() => store.close());
  const at = toStoreTime(Date.UTC(2026, 0, 1));

  const batch = (
    msg: string,
    data: Record<string, string | number | boolean>,
    attributes = {},
  ): StoreBatch => ({
    identityLinks: [],
    merges: [],
    conflicts: [],
    customers: [
      {
        svc_id: `c-${msg}`,
        version: 1,
        msg_id: msg,
        updated_at: at,
        merged_into: null,
        attributes: { email: 'a@b.co', ...attributes },
      },
    ],
    events: [
      {
        event_id: `${msg}-0`,
        msg_id: msg,
        svc_id: `c-${msg}`,
        ts: at,
        received_at: at,
        type: 't',
        action: '',
        channel: 'offline',
        identifiers: {},
        data,
        order: null,
      },
    ],
  });

  it('adds typed nullable columns once (again is a no-op) and writes custom event fields into them', async () => {
    await store.write('acc1', batch('m0', { page: '/' }), false);
    const columns = [
      { name: 'score', type: 'number' as const },
      { name: 'seen_at', type: 'timestamp' as const },
      { name: 'vip', type: 'boolean' as const },
      { name: 'note', type: 'text' as const },
    ];
    await store.addColumns('acc1', 'events', columns);
    await store.addColumns('acc1', 'events', columns);
    await store.write(
      'acc1',
      batch('m1', {
        page: '/',
        score: '123456789012345678',
        seen_at: toStoreTime(1700000000500),
        vip: true,
        note: 'hi',
      }),
      false,
    );
    const rows = await store.query<Record<string, unknown>>(
      'acc1',
      'SELECT msg_id, toString(score) AS score, toUnixTimestamp64Milli(seen_at) AS seen, vip, note FROM {db}.events ORDER BY msg_id',
    );
    expect(rows).toEqual([
      { msg_id: 'm0', score: null, seen: null, vip: null, note: null },
      { msg_id: 'm1', score: '123456789012345678', seen: 1700000000500, vip: true, note: 'hi' },
    ]);
  });

  it('gives a rebuild the custom customer fields, timestamps as unix seconds', async () => {
    await store.addColumns('acc2', 'customers', [
      { name: 'tier', type: 'number' },
      { name: 'joined', type: 'timestamp' },
    ]);
    await store.write('acc2', batch('m2', {}, { tier: 3, joined: toStoreTime(1700000000000) }), false);
    const profiles = [];
    for await (const p of store.currentProfiles('acc2')) profiles.push(p);
    expect(profiles).toEqual([
      { svc_id: 'c-m2', version: 1, attributes: { email: 'a@b.co', tier: 3, joined: 1700000000 } },
    ]);
  });

  it('upserts object records field by field, keyed by the primary key, never a message twice', async () => {
    const columns = [
      { name: 'store_id', type: 'string' as const, primary: true },
      { name: 'city', type: 'string' as const },
    ];
    await store.ensureObjectTable('acc3', 'obj_stores', columns);
    await store.writeObjects(
      'acc3',
      'obj_stores',
      [{ _msg_id: 'a', _updated_at: at, store_id: 's1', city: 'Oslo' }],
      false,
    );
    // A field created later: the table gets its column; older rows have no value.
    await store.ensureObjectTable('acc3', 'obj_stores', [...columns, { name: 'area', type: 'number' }]);
    await store.writeObjects(
      'acc3',
      'obj_stores',
      [{ _msg_id: 'b', _updated_at: at, store_id: 's1', area: 12.5 }],
      false,
    );
    await store.writeObjects(
      'acc3',
      'obj_stores',
      [{ _msg_id: 'b', _updated_at: at, store_id: 's1', area: 12.5 }],
      true,
    );
    const rows = await store.query<Record<string, unknown>>(
      'acc3',
      'SELECT store_id, city, toString(area) AS area FROM {db}.obj_stores FINAL',
    );
    expect(rows).toEqual([{ store_id: 's1', city: 'Oslo', area: '12.5' }]);
    const raw = await store.query<{ n: number }>('acc3', 'SELECT count() AS n FROM {db}.obj_stores');
    expect(Number(raw[0]!.n)).toBeLessThanOrEqual(2);
  });

  it('reads each object field as acceptance order leaves it, whatever order the writers inserted in', async () => {
    const columns = [
      { name: 'store_id', type: 'string' as const, primary: true },
      { name: 'city', type: 'string' as const },
      { name: 'area', type: 'number' as const },
    ];
    await store.ensureObjectTable('acc4', 'obj_stores', columns);
    // A record as the objects writer makes it: each value also as (its record's acceptance order, value).
    const record = (msg: string, order: number, fields: Record<string, string | number>) => {
      const row: { _msg_id: string } & Record<string, unknown> = {
        _msg_id: msg,
        _updated_at: at,
        store_id: 's1',
      };
      for (const [name, value] of Object.entries(fields)) {
        row[name] = value;
        row[objectFieldAtColumn(name)] = [order, value];
      }
      return row;
    };
    // A row stored before values carried their order; then two processors insert out of order: the
    // record accepted 3rd first, the 2nd (an older city, and an area) after it.
    await store.writeObjects(
      'acc4',
      'obj_stores',
      [{ _msg_id: 'old', _updated_at: at, store_id: 's1', city: 'Bergen', area: 1 }],
      false,
    );
    await store.writeObjects('acc4', 'obj_stores', [record('m3', 3_000, { city: 'Oslo' })], false);
    await store.writeObjects(
      'acc4',
      'obj_stores',
      [record('m2', 2_000, { city: 'Trondheim', area: 12.5 })],
      false,
    );
    const read = () =>
      store.query<Record<string, unknown>>(
        'acc4',
        `SELECT store_id, city, toString(area) AS area FROM (${currentObjectRowsSql('{db}', 'obj_stores', columns)})`,
      );
    expect(await read()).toEqual([{ store_id: 's1', city: 'Oslo', area: '12.5' }]);
    // Merged parts keep it so (FINAL reads what a merge would write).
    await store.execute('acc4', 'OPTIMIZE TABLE {db}.obj_stores FINAL');
    expect(await read()).toEqual([{ store_id: 's1', city: 'Oslo', area: '12.5' }]);
  });

  it('lets no name outside the naming rules reach SQL', async () => {
    await expect(
      store.addColumns('acc1', 'events', [{ name: 'x; DROP TABLE y', type: 'text' }]),
    ).rejects.toThrow('not a schema name');
  });
});
