import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChdbTransport } from './chdb/chdb.transport.js';
import { ClickHouseStore } from './clickhouse.store.js';
import { withoutPersonalData } from './redaction.js';
import type { StoreBatch } from './tables/account-tables.js';

const at = '2026-11-22 10:00:00.000';

/** Everything a customer can leave in the store, with its personal data spelled `<c>-secret…`. */
function personOf(c: string, msg: string): StoreBatch {
  const email = `${c}-secret@x.com`;
  const order = {
    order_id: `${c}-o1`,
    total: 12.5,
    coupon_code: 'WINTER',
    email,
    ship_address: `${c}-secret street`,
    name: `${c}-secret name`,
    items: [{ product_id: 'shoe', price: 12.5, quantity: 1 }],
  };
  return {
    identityLinks: [],
    merges: [
      { loser: `${c}-loser`, survivor: c, seq: 1, cause: [`email:${email}`], msg_id: msg, created_at: at },
    ],
    conflicts: [
      {
        svc_id: c,
        other_svc_id: 'someone',
        reason: 'customer_id',
        cause: [`email:${email}`],
        msg_id: msg,
        created_at: at,
      },
    ],
    customers: [
      {
        svc_id: c,
        version: 1,
        msg_id: msg,
        updated_at: at,
        merged_into: null,
        attributes: { email, name: `${c}-secret name`, phone: `${c}-secret-phone`, opted_in: true },
      },
      {
        svc_id: `${c}-loser`,
        version: 1,
        msg_id: msg,
        updated_at: at,
        merged_into: c,
        attributes: { email: `${c}-secret-loser@x.com` },
      },
    ],
    events: [
      {
        event_id: `${c}-e1`,
        msg_id: msg,
        svc_id: c,
        ts: at,
        received_at: at,
        type: 'order',
        action: 'purchase',
        channel: 'web',
        identifiers: { email, vuid: `${c}-secret-cookie` },
        data: {
          product_id: 'shoe',
          page: '/checkout',
          ua: `${c}-secret agent`,
          ip: '10.0.0.1',
          shoe_size: `${c}-secret size`,
        },
        order: JSON.stringify(order),
      },
      {
        event_id: `${c}-e2`,
        msg_id: msg,
        svc_id: `${c}-loser`,
        ts: at,
        received_at: at,
        type: 'pageview',
        action: '',
        channel: 'web',
        identifiers: { email: `${c}-secret-loser@x.com` },
        data: { page: '/home' },
        order: null,
      },
    ],
    orderChanges: [
      {
        change_id: `${c}-ch1`,
        msg_id: msg,
        order_id: `${c}-o1`,
        seq: 1,
        kind: 'event',
        action: 'purchase',
        ts_ms: 0,
        svc_id: c,
        subtotal: 125000,
        total: 125000,
        fields: JSON.stringify({ coupon_code: 'WINTER', email, ship_address: `${c}-secret street` }),
      },
      {
        // An order update names no customer: it goes with the order's.
        change_id: `${c}-ch2`,
        msg_id: msg,
        order_id: `${c}-o1`,
        seq: 2,
        kind: 'entity',
        action: 'update',
        ts_ms: 0,
        svc_id: null,
        subtotal: null,
        total: null,
        fields: JSON.stringify({ bill_address: `${c}-secret other street`, tax: 1 }),
      },
    ],
    orders: [
      {
        order_id: `${c}-o1`,
        version: 1,
        msg_id: msg,
        updated_at: at,
        svc_id: c,
        purchased: true,
        ts: at,
        subtotal: 12.5,
        total: 12.5,
        revenue: 12.5,
        counts_for_lifecycle: true,
        cancelled: false,
        partial: false,
        adjustments: 0,
        fields: {
          coupon_code: 'WINTER',
          email,
          bill_address: `${c}-secret street`,
          gift_note: `${c}-secret note`,
        },
      },
    ],
    consentHistory: [
      {
        svc_id: c,
        list_id: 'newsletter',
        subscribed: true,
        version: 1,
        identifier_kind: 'email',
        identifier_value: email,
        api_key: 'public',
        source: 'subscriptions',
        msg_id: msg,
        changed_at: at,
        stored_at: at,
      },
    ],
  };
}

const TABLES = [
  'identity_merges',
  'identity_conflicts',
  'customers',
  'events',
  'order_changes',
  'orders',
  'consent_history',
];

/** The compliance opt-out's redaction, on chDB: stored rows, and rows about to be stored, alike. */
describe('redaction', () => {
  let store: ClickHouseStore;
  beforeAll(() => {
    store = new ClickHouseStore(new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-redaction-'))));
  });
  afterAll(() => store.close());

  /** Every row of the tables a redaction reaches, as text, in a stable order. */
  async function dump(account: string): Promise<string[]> {
    const out: string[] = [];
    for (const table of TABLES) {
      const rows = await store.query<Record<string, unknown>>(
        account,
        `SELECT * FROM {db}.${table} ORDER BY msg_id`,
      );
      for (const row of rows.map((r) => JSON.stringify(r)).sort()) out.push(`${table} ${row}`);
    }
    return out;
  }

  async function account(name: string): Promise<void> {
    await store.ensureAccount(name);
    // Custom fields of events and orders: a redaction clears them too.
    await store.addColumns(name, 'events', [{ name: 'shoe_size', type: 'string' }]);
    await store.addColumns(name, 'orders', [{ name: 'gift_note', type: 'string' }]);
  }

  it('clears every copy of the person, keeps what is not personal, and leaves others alone', async () => {
    await account('red1');
    await store.write('red1', personOf('ann', 'm1'), false);
    await store.write('red1', personOf('bob', 'm2'), false);
    const bobBefore = (await dump('red1')).filter((r) => r.includes('bob'));

    await store.redactCustomers('red1', ['ann']);
    await store.redactCustomers('red1', ['ann']); // a redelivery changes nothing more

    const after = await dump('red1');
    expect(after.filter((r) => r.includes('ann-secret'))).toEqual([]);
    expect(after.filter((r) => r.includes('bob'))).toEqual(bobBefore);
    expect(bobBefore.filter((r) => r.includes('bob-secret')).length).toBeGreaterThan(5);
    const [event] = await store.query<Record<string, unknown>>(
      'red1',
      "SELECT * FROM {db}.events WHERE event_id = 'ann-e1'",
    );
    expect(event).toMatchObject({
      svc_id: 'ann',
      type: 'order',
      action: 'purchase',
      identifiers: {},
      product_id: 'shoe',
      page: '/checkout',
      ua: null,
      ip: null,
      shoe_size: null,
    });
    expect(JSON.parse(event!.order as string)).toEqual({
      order_id: 'ann-o1',
      total: 12.5,
      coupon_code: 'WINTER',
      items: [{ product_id: 'shoe', price: 12.5, quantity: 1 }],
    });
    const [order] = await store.query<Record<string, unknown>>(
      'red1',
      "SELECT * FROM {db}.orders WHERE order_id = 'ann-o1'",
    );
    expect(order).toMatchObject({
      svc_id: 'ann',
      total: 12.5,
      coupon_code: 'WINTER',
      email: null,
      gift_note: null,
    });
    const [change] = await store.query<{ fields: string; total: string }>(
      'red1',
      "SELECT fields, total FROM {db}.order_changes WHERE change_id = 'ann-ch1'",
    );
    expect(JSON.parse(change!.fields)).toEqual({ coupon_code: 'WINTER' });
    const [update] = await store.query<{ fields: string }>(
      'red1',
      "SELECT fields FROM {db}.order_changes WHERE change_id = 'ann-ch2'",
    );
    expect(JSON.parse(update!.fields)).toEqual({ tax: 1 });
    expect(
      await store.query(
        'red1',
        "SELECT svc_id, redacted FROM {db}.customers WHERE svc_id LIKE 'ann%' ORDER BY svc_id",
      ),
    ).toEqual([
      { svc_id: 'ann', redacted: true },
      { svc_id: 'ann-loser', redacted: true },
    ]);
  });

  it('stores the rows of a customer the batch redacts as a redaction of stored rows leaves them', async () => {
    await account('red2');
    const ann = personOf('ann', 'm1');
    ann.customers[0]!.redacted = true;
    await store.write('red2', withoutPersonalData(ann), false);
    await store.write('red2', withoutPersonalData(personOf('bob', 'm2')), false);
    expect(await dump('red2')).toEqual(await dump('red1'));
  });

  it('stores an order update of a customer redacted before, named by the caller, redacted', () => {
    const { orders, orderChanges } = personOf('ann', 'm3');
    const later: StoreBatch = { ...personOf('none', 'm3'), customers: [], orders, orderChanges };
    const out = withoutPersonalData(later, ['ann']);
    expect(JSON.stringify([out.orders, out.orderChanges])).not.toContain('ann-secret');
    expect(out.orders![0]!.fields).toEqual({ coupon_code: 'WINTER' });
    expect(JSON.stringify(out.events)).toContain('none-secret'); // others' rows are left as they are
  });
});
