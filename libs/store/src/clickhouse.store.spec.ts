import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toStoreTime } from '@cdp/domain';
import type { StoreBatch } from './analytic-store.port.js';
import { ChdbTransport } from './chdb/chdb.transport.js';
import { ClickHouseStore } from './clickhouse.store.js';

/** The store's SQL, run on chDB (the same SQL a ClickHouse server runs). */
describe('ClickHouseStore on chDB', () => {
  let transport: ChdbTransport;
  let store: ClickHouseStore;
  beforeAll(() => {
    transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-store-')));
    store = new ClickHouseStore(transport);
  });
  afterAll(() => store.close());

  const at = '2026-11-22 10:00:00.000';
  function batch(msg: string, customer: string, events: number): StoreBatch {
    return {
      identityLinks: [
        {
          kind: 'email',
          value: `${customer}@x.com`,
          svc_id: customer,
          born: `b-${customer}`,
          msg_id: msg,
          created_at: at,
        },
      ],
      merges: [],
      conflicts: [],
      customers: [
        {
          svc_id: customer,
          version: 1,
          msg_id: msg,
          updated_at: at,
          merged_into: null,
          attributes: { email: `${customer}@x.com`, opted_in: true },
        },
      ],
      events: Array.from({ length: events }, (_, i) => ({
        event_id: `${msg}-${i}`,
        msg_id: msg,
        svc_id: customer,
        ts: at,
        received_at: at,
        type: 'product',
        action: 'detail',
        channel: 'offline',
        identifiers: { email: `${customer}@x.com` },
        data: { product_id: `p${i}`, landing: true, days_since_last_visit: 3 },
        order: null,
      })),
    };
  }
  const emptyOf = (): StoreBatch => ({
    identityLinks: [],
    merges: [],
    conflicts: [],
    customers: [],
    events: [],
  });
  const count = async (account: string, table: string) =>
    Number((await store.query<{ c: string }>(account, `SELECT count() AS c FROM {db}.${table}`))[0]!.c);

  it('stores typed event columns per account', async () => {
    await store.write('acc1', batch('m1', 'c1', 3), false);
    const rows = await store.query<Record<string, unknown>>(
      'acc1',
      'SELECT product_id, landing, days_since_last_visit, identifiers FROM {db}.events ORDER BY event_id',
    );
    expect(rows[0]).toEqual({
      product_id: 'p0',
      landing: true,
      days_since_last_visit: 3,
      identifiers: { email: 'c1@x.com' },
    });
    expect(await count('acc2', 'events')).toBe(0);
  });

  it('stores NULL for every event field no row of the batch has, and each row its own fields', async () => {
    const events = batch('m-sparse', 'c9', 2).events;
    events[0]!.data = { page: '/a' };
    events[1]!.data = { product_id: 'p1', page: null as unknown as string };
    await store.write('acc_sparse', { ...emptyOf(), events }, false);
    const rows = await store.query<Record<string, unknown>>(
      'acc_sparse',
      'SELECT page, product_id, landing, category FROM {db}.events ORDER BY event_id',
    );
    expect(rows).toEqual([
      { page: '/a', product_id: null, landing: null, category: null },
      { page: null, product_id: 'p1', landing: null, category: null },
    ]);
  });

  it('never stores a message twice: same insert again, or a redelivery regrouped with new messages', async () => {
    await store.write('acc3', batch('m1', 'c1', 5), false);
    await store.write('acc3', batch('m1', 'c1', 5), false); // same token: dropped by the engine
    const regrouped = batch('m1', 'c1', 5);
    const fresh = batch('m2', 'c2', 2);
    await store.write(
      'acc3',
      {
        identityLinks: [...regrouped.identityLinks, ...fresh.identityLinks],
        merges: [],
        conflicts: [],
        customers: [...regrouped.customers, ...fresh.customers],
        events: [...regrouped.events, ...fresh.events],
      },
      true,
    );
    expect(await count('acc3', 'events')).toBe(7);
    expect(await count('acc3', 'identity_links')).toBe(2);
  });

  it('reads back identity links, lowered born keys and the latest profile snapshot of each customer', async () => {
    await store.write('acc4', batch('m1', 'c1', 0), false);
    const later = batch('m2', 'c1', 0);
    later.customers[0] = {
      ...later.customers[0]!,
      version: 2,
      attributes: { email: 'c1@x.com', city: 'Oslo' },
    };
    // m2 linked nothing but lowered c1's born key twice (two records accepted before c1's first).
    const lowered = (born: string) => ({
      kind: '',
      value: '',
      svc_id: 'c1',
      born,
      msg_id: 'm2',
      created_at: at,
    });
    later.identityLinks = [lowered('a-2'), lowered('a-1')];
    await store.write('acc4', later, false);
    const graph = store.identityGraph('acc4');
    const links = [];
    for await (const l of graph.links) links.push(l);
    expect(links).toEqual([{ kind: 'email', value: 'c1@x.com', svc_id: 'c1', born: 'b-c1' }]);
    const borns = [];
    for await (const b of graph.borns) borns.push(b);
    expect(borns).toEqual([{ svc_id: 'c1', born: 'a-1' }]);
    const profiles = [];
    for await (const p of store.currentProfiles('acc4')) profiles.push(p);
    expect(profiles).toEqual([{ svc_id: 'c1', version: 2, attributes: { email: 'c1@x.com', city: 'Oslo' } }]);
  });

  it('keeps the latest profile snapshot by version, whatever order the rows of several writers arrive in', async () => {
    // Three processors stored one customer's snapshots: the newest insert is not the newest version.
    const snapshot = (msg: string, version: number, city: string): StoreBatch => {
      const b = batch(msg, 'c1', 0);
      b.identityLinks = [];
      b.customers[0] = {
        ...b.customers[0]!,
        version,
        attributes: { email: 'c1@x.com', city },
        field_at: JSON.stringify({ city: version * 1000 }),
      };
      return b;
    };
    await store.write('accorder', snapshot('m3', 3, 'Rome'), false);
    await store.write('accorder', snapshot('m1', 1, 'Oslo'), false);
    await store.write('accorder', snapshot('m2', 2, 'Lima'), false);
    const profiles = [];
    for await (const p of store.currentProfiles('accorder')) profiles.push(p);
    // The field times come back with it: a rebuild keeps guarding the fields.
    expect(profiles).toEqual([
      { svc_id: 'c1', version: 3, attributes: { email: 'c1@x.com', city: 'Rome' }, times: { city: 3000 } },
    ]);
    // What exports and reads of the table's current rows see.
    const current = await store.query<{ version: string; city: string }>(
      'accorder',
      'SELECT version, city FROM {db}.customers FINAL',
    );
    expect(current.map((r) => [Number(r.version), r.city])).toEqual([[3, 'Rome']]);
  });

  it('leaves the rows of a message begun and not committed out of every rebuild read, until it commits', async () => {
    const a = 'acccut';
    await store.begin(a, ['k1']);
    await store.write(a, batch('k1', 'k1c', 1), false);
    await store.commit(a, ['k1']);
    // A message cut short by a crash: a new customer's link, its profile change, a merge.
    const cut = batch('k2', 'k2c', 1);
    cut.customers.push({ ...cut.customers[0]!, svc_id: 'k1c', version: 2, attributes: { city: 'Oslo' } });
    cut.merges = [{ loser: 'k1c', survivor: 'k2c', seq: 1, cause: [], msg_id: 'k2', created_at: at }];
    cut.consentHistory = [
      {
        svc_id: 'k2c',
        list_id: 'news',
        subscribed: true,
        version: 1,
        identifier_kind: 'email',
        identifier_value: 'k2c@x.com',
        api_key: 'key',
        source: 'subscriptions',
        msg_id: 'k2',
        changed_at: at,
        stored_at: at,
      },
    ];
    cut.optoutPool = [{ kind: 'email', value: 'k2c@x.com', msg_id: 'k2', created_at: at }];
    await store.begin(a, ['k2']);
    await store.write(a, cut, false);
    expect(await store.unfinishedMessages(a)).toEqual(['k2']);
    const read = async () => {
      const links = [];
      for await (const l of store.identityGraph(a).links) links.push(l.svc_id);
      const merges = [];
      for await (const m of store.identityGraph(a).merges) merges.push(m.loser);
      const profiles = [];
      for await (const p of store.currentProfiles(a)) profiles.push(`${p.svc_id}@${p.version}`);
      const consent = [];
      for await (const c of store.consentStates(a)) consent.push(c.svc_id);
      const pool = [];
      for await (const id of store.optOutPool(a)) pool.push(id.value);
      return { links, merges, profiles: profiles.sort(), consent, pool };
    };
    // A customer the committed messages know is read from its newest snapshot, the cut message's: the
    // engine may fold the earlier ones into it whenever it merges parts (customers is a
    // ReplacingMergeTree), and the redelivery applies the same changes again. The customer only the cut
    // message knows is left out, as the identity graph leaves it out.
    const cutShort = { links: ['k1c'], merges: [], profiles: ['k1c@2'], consent: [], pool: [] };
    expect(await read()).toEqual(cutShort);
    await store.query(a, 'OPTIMIZE TABLE {db}.customers FINAL');
    expect(await read()).toEqual(cutShort);
    await store.commit(a, ['k2']);
    expect(await store.unfinishedMessages(a)).toEqual([]);
    expect(await read()).toEqual({
      links: ['k1c', 'k2c'],
      merges: ['k1c'],
      profiles: ['k1c@2', 'k2c@1'],
      consent: ['k2c'],
      pool: ['k2c@x.com'],
    });
  });

  it('reads merges back in order, and attributes a merged customer to its latest survivor', async () => {
    const merge = (loser: string, survivor: string, seq: number, msg: string) => ({
      loser,
      survivor,
      seq,
      cause: ['email:a@x.com'],
      msg_id: msg,
      created_at: at,
    });
    const b = batch('mm1', 'cs', 0);
    b.merges = [merge('cl', 'cm', 1, 'mm1'), merge('cm', 'cs', 2, 'mm1'), merge('cl', 'cs', 2, 'mm1')];
    b.customers.push({ ...b.customers[0]!, svc_id: 'cm', merged_into: 'cs', version: 3 });
    await store.write('acc9', b, false);
    const merges = [];
    for await (const m of store.identityGraph('acc9').merges) merges.push(m);
    expect(merges).toEqual([
      { loser: 'cl', survivor: 'cm', seq: 1 },
      { loser: 'cl', survivor: 'cs', seq: 2 },
      { loser: 'cm', survivor: 'cs', seq: 2 },
    ]);
    const survivors = await store.query<{ svc_id: string; survivor: string }>(
      'acc9',
      'SELECT svc_id, survivor FROM {db}.customer_survivors ORDER BY svc_id',
    );
    expect(survivors).toEqual([
      { svc_id: 'cl', survivor: 'cs' },
      { svc_id: 'cm', survivor: 'cs' },
    ]);
    const profiles = [];
    for await (const p of store.currentProfiles('acc9')) profiles.push(p.svc_id);
    expect(profiles).toEqual(['cs']); // a merged customer's profile lives on in its survivor
  });

  it('redacts a customer and the customers merged into it in every snapshot, and keeps the audit and pool', async () => {
    const a = 'accopt';
    const first = batch('o1', 'rs', 0);
    first.customers[0]!.attributes = { email: 'rs@x.com', name: 'R S', phone: '1', opted_in: true };
    first.customers.push({
      svc_id: 'rl',
      version: 2,
      msg_id: 'o1',
      updated_at: at,
      merged_into: 'rs',
      attributes: { email: 'rl@x.com', city: 'Rome' },
    });
    first.merges = [{ loser: 'rl', survivor: 'rs', seq: 1, cause: [], msg_id: 'o1', created_at: at }];
    await store.write(a, first, false);
    await store.write(a, batch('o2', 'other', 0), false);
    const redaction: StoreBatch = {
      identityLinks: [],
      merges: [],
      conflicts: [],
      events: [],
      customers: [
        {
          svc_id: 'rs',
          version: 2,
          msg_id: 'o3',
          updated_at: at,
          merged_into: null,
          redacted: true,
          attributes: { opted_in: false },
        },
      ],
      optoutPool: [{ kind: 'email', value: 'rs@x.com', msg_id: 'o3', created_at: at }],
      optoutRequests: [
        {
          msg_id: 'o3',
          requester: 'dpo@x.com',
          api_key: 'private:k1',
          requested_at: at,
          processed_at: at,
          sent: ['email:rs@x.com'],
          phone: null,
          customers: ['rs'],
          identifiers: ['email:rs@x.com'],
        },
      ],
    };
    await store.write(a, redaction, false);
    await store.redactCustomers(a, ['rs']);
    const rows = await store.query<Record<string, unknown>>(
      a,
      "SELECT svc_id, email, name, phone, city, redacted FROM {db}.customers WHERE svc_id IN ('rs', 'rl') ORDER BY svc_id, version",
    );
    expect(rows).toHaveLength(3);
    for (const row of rows)
      expect(row).toMatchObject({ email: null, name: null, phone: null, city: null, redacted: true });
    const kept = await store.query<{ email: string }>(
      a,
      "SELECT email FROM {db}.customers WHERE svc_id = 'other'",
    );
    expect(kept).toEqual([{ email: 'other@x.com' }]);
    const current = [];
    for await (const p of store.currentProfiles(a)) current.push(p);
    expect(current.find((p) => p.svc_id === 'rs')).toEqual({
      svc_id: 'rs',
      version: 2,
      attributes: { opted_in: false },
      redacted: true,
    });
    const pool = [];
    for await (const id of store.optOutPool(a)) pool.push(id);
    expect(pool).toEqual([{ kind: 'email', value: 'rs@x.com' }]);
    expect(await count(a, 'optout_requests')).toBe(1);
  });

  it('reads both time forms the domain writes, before and after 1970, to the millisecond', async () => {
    const times = [Date.UTC(1950, 5, 1, 12, 0, 0, 7), 1_700_000_000_123];
    const b = batch('mt', 'ct', 2);
    b.events.forEach((e, i) => (e.ts = toStoreTime(times[i]!)));
    await store.write('acc5', b, false);
    const rows = await store.query<{ ms: number }>(
      'acc5',
      'SELECT toUnixTimestamp64Milli(ts) AS ms FROM {db}.events ORDER BY ts',
    );
    expect(rows.map((r) => Number(r.ms))).toEqual(times);
  });

  it('keeps the whole consent history and reads back the latest membership per customer and list', async () => {
    const change = (msg: string, svc: string, list: string, subscribed: boolean, version: number) => ({
      svc_id: svc,
      list_id: list,
      subscribed,
      version,
      identifier_kind: 'email',
      identifier_value: `${svc}@x.com`,
      api_key: 'public',
      source: 'subscriptions',
      msg_id: msg,
      changed_at: at,
      stored_at: at,
    });
    const history = [
      change('s1', 'c1', 'news', true, 1),
      change('s1', 'c1', 'svc_all', true, 2),
      change('s2', 'c1', 'news', false, 3),
      change('s2', 'c2', 'news', true, 1),
    ];
    await store.write(
      'acc6',
      { identityLinks: [], merges: [], conflicts: [], customers: [], events: [], consentHistory: history },
      false,
    );
    // A redelivered message stores nothing twice.
    await store.write(
      'acc6',
      { identityLinks: [], merges: [], conflicts: [], customers: [], events: [], consentHistory: history },
      true,
    );
    expect(await count('acc6', 'consent_history')).toBe(4);
    const states = [];
    for await (const s of store.consentStates('acc6')) states.push(s);
    expect(states.sort((a, b) => (a.svc_id + a.list_id).localeCompare(b.svc_id + b.list_id))).toEqual([
      { svc_id: 'c1', list_id: 'news', subscribed: false, version: 3 },
      { svc_id: 'c1', list_id: 'svc_all', subscribed: true, version: 2 },
      { svc_id: 'c2', list_id: 'news', subscribed: true, version: 1 },
    ]);
  });

  it('reads back the membership latest in acceptance order (`at`), whatever order several writers stored it in', async () => {
    const change = (msg: string, subscribed: boolean, version: number, changeAt: number) => ({
      svc_id: 'c1',
      list_id: 'news',
      subscribed,
      version,
      at: changeAt,
      identifier_kind: 'email',
      identifier_value: 'c1@x.com',
      api_key: 'public',
      source: 'subscriptions',
      msg_id: msg,
      changed_at: at,
      stored_at: at,
    });
    const write = (rows: ReturnType<typeof change>[]) =>
      store.write(
        'acc6o',
        { identityLinks: [], merges: [], conflicts: [], customers: [], events: [], consentHistory: rows },
        false,
      );
    // Processor B stored the last toggle (unsubscribe, at 5_000) first; processor A's older toggles came
    // later, one of them redelivered after a crash and applied as stale (the hot state's version kept).
    await write([change('m5', false, 2, 5_000)]);
    await write([change('m4', true, 2, 4_000), change('m2', true, 1, 2_000)]);
    await write([change('m3', false, 3, 3_000)]);
    const states = [];
    for await (const s of store.consentStates('acc6o')) states.push(s);
    expect(states).toEqual([{ svc_id: 'c1', list_id: 'news', subscribed: false, version: 3, at: 5_000 }]);
  });

  it('gives an events table made before a new event field its column', async () => {
    await store.write('acc7', batch('m7', 'c7', 1), false);
    await transport.exec('ALTER TABLE cdp_acc7.events DROP COLUMN list_id');
    // A process started on the older table (a fresh store object: nothing known about the account yet).
    const later = new ClickHouseStore(transport);
    const b = batch('m8', 'c7', 1);
    b.events[0]!.data.list_id = 'news';
    await later.write('acc7', b, false);
    const rows = await store.query<{ list_id: string | null }>(
      'acc7',
      'SELECT list_id FROM {db}.events ORDER BY event_id',
    );
    expect(rows.map((r) => r.list_id)).toEqual([null, 'news']);
  });

  describe('commerce tables', () => {
    const change = (msg: string, seq: number, id = `${msg}-0`) => ({
      change_id: id,
      msg_id: msg,
      order_id: 'o1',
      seq,
      kind: 'event' as const,
      action: seq === 1 ? 'purchase' : 'return',
      ts_ms: 1_700_000_000_000 + seq,
      svc_id: 'c1',
      subtotal: 1_000_000,
      total: null,
      fields: '{"coupon_code":"C"}',
    });
    const order = (msg: string, version: number, subtotal: number) => ({
      order_id: 'o1',
      version,
      msg_id: msg,
      updated_at: at,
      svc_id: 'c1',
      purchased: true,
      ts: at,
      subtotal,
      total: subtotal,
      revenue: subtotal,
      counts_for_lifecycle: true,
      cancelled: false,
      partial: version > 1,
      adjustments: version - 1,
      fields: { coupon_code: 'C', discount: 2.5 },
    });
    const empty = { identityLinks: [], merges: [], conflicts: [], customers: [], events: [] };

    it('keeps the latest order summary by version, whatever order the rows arrive in', async () => {
      await store.write('acc6', { ...empty, orders: [order('m2', 2, 90)] }, false);
      await store.write('acc6', { ...empty, orders: [order('m1', 1, 100)] }, false);
      const rows = await store.query<Record<string, unknown>>(
        'acc6',
        'SELECT version, subtotal, partial, coupon_code, discount, ship_address FROM {db}.orders FINAL',
      );
      expect(rows).toEqual([
        { version: 2, subtotal: 90, partial: true, coupon_code: 'C', discount: 2.5, ship_address: null },
      ]);
    });

    it('reads the order-change log back in order, each change once, after a redelivery', async () => {
      await store.write('acc7', { ...empty, orderChanges: [change('m2', 2)] }, false);
      await store.write('acc7', { ...empty, orderChanges: [change('m1', 1)] }, false);
      await store.write('acc7', { ...empty, orderChanges: [change('m1', 1), change('m3', 3)] }, true);
      const log = [];
      for await (const row of store.orderChanges('acc7')) log.push(row);
      expect(log.map((r) => [r.change_id, Number(r.seq), Number(r.subtotal), r.total, r.fields])).toEqual([
        ['m1-0', 1, 1_000_000, null, '{"coupon_code":"C"}'],
        ['m2-0', 2, 1_000_000, null, '{"coupon_code":"C"}'],
        ['m3-0', 3, 1_000_000, null, '{"coupon_code":"C"}'],
      ]);
    });

    it('reads the current product rows it is asked for', async () => {
      const product = (msg: string, version: number, fields: Record<string, string | number>) => ({
        product_id: 'p1',
        version,
        msg_id: msg,
        updated_at: at,
        fields,
      });
      await store.write('acc8', { ...empty, products: [product('m1', 1, { name: 'A', price: 1.5 })] }, false);
      await store.write(
        'acc8',
        {
          ...empty,
          products: [{ ...product('m2', 2, { name: 'B', category: 'X > Y' }), field_at: '{"name":2000}' }],
        },
        false,
      );
      expect(await store.products('acc8', ['p1', 'p2'])).toEqual([
        {
          product_id: 'p1',
          version: 2,
          msg_id: 'm2',
          updated_at: expect.any(String),
          fields: { name: 'B', category: 'X > Y' },
          field_at: '{"name":2000}',
        },
      ]);
      expect(await store.products('acc8', [])).toEqual([]);
    });
  });

  it('refuses an account id that is not a safe database name', async () => {
    await expect(store.ensureAccount('x; DROP DATABASE y')).rejects.toThrow(/not an account id/);
  });
});
