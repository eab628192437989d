import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { parseTimestamp } from '@cdp/domain';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { parquetRows } from './support/parquet.js';
import { runExport } from './support/exports.js';
import { postWithKey } from './support/api-calls.js';

/**
 * "Accepted means storable", as a property: generated records with hostile values (lone surrogates,
 * control characters, emoji, strings at and over 1024 characters, extreme numbers, times at the range
 * edges) go through the API (body parser, batch validator), the processor's row encoding into chDB, and
 * an export to CSV and to Parquet; every record answered 202 is in both exports with every value as it
 * was accepted. Embedded wiring: the whole path in this process.
 */

/** Stands for `1e400` in a body: JSON.stringify cannot write a number that overflows a double. */
const OVERFLOW = '\u0000overflow';

const nastyUnits = [
  '\u0000',
  '\n',
  '\r',
  '\t',
  '"',
  ',',
  ';',
  '\\',
  ' ',
  '\u2028',
  '\u0085',
  '\ufeff',
  '😀',
  'é',
  'a',
  '\ud800',
  '\udfff',
  '\u{10ffff}',
  '=',
  '%',
];
const nasty = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 10 }),
  fc.string({ unit: fc.constantFrom(...nastyUnits), maxLength: 10 }),
  fc.constantFrom(1023, 1024, 1025).map((n) => '😀'.repeat(n)),
  fc.constantFrom(1024, 1025).map((n) => 'x'.repeat(n)),
  fc.constantFrom('', 'null', 'plain text'),
);
const number = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.double({ min: -1e12, max: 1e12, noNaN: true }).map((x) => Math.round(x * 10_000) / 10_000),
  fc.constantFrom(
    0,
    -0,
    0.1,
    0.0001,
    0.00001,
    0.12345,
    99_999_999_999.9999,
    -99_999_999_999.9999,
    100_000_000_000,
    5e-324,
    1e21,
    Number.MAX_SAFE_INTEGER,
    2 ** 53,
    OVERFLOW,
  ),
);
const MIN_S = Date.UTC(1900, 0, 1) / 1000;
const MAX_S = Date.UTC(2299, 11, 31, 23, 59, 59, 999) / 1000;
const timestamp = fc.oneof(
  fc.integer({ min: MIN_S - 2, max: Math.floor(MAX_S) + 2 }),
  fc.double({ min: -3e9, max: 1.1e10, noNaN: true }),
  fc.constantFrom(
    0,
    0.5,
    0.001,
    -0.001,
    12,
    99_999_999.999,
    100_000_000,
    MIN_S,
    MIN_S - 0.001,
    MAX_S,
    MAX_S + 0.001,
    9_999_999_999.999,
    10_000_000_000,
    '1970-01-01T00:00:00Z',
    '1970-01-01T00:00:00.999Z',
    '1900-01-01',
    '2299-12-31T23:59:59.999Z',
    '2300-01-01',
    '0',
    '0.5',
    OVERFLOW,
  ),
);
const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 3 });
const defined = <T extends object>(record: T): T =>
  Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as T;

const profileArb = fc.record({
  name: optional(nasty),
  city: optional(nasty),
  phone: optional(nasty),
  nick: optional(nasty),
  score: optional(fc.oneof(number, fc.constantFrom('123456789012345678', '-12.5000', '1e5', '12.34567'))),
  seen_at: optional(timestamp),
  vip: optional(fc.constantFrom<unknown>(true, false, 1, 0, '1', 'true', 'yes')),
});
const eventArb = fc.record({
  type: nasty,
  action: optional(nasty),
  page: optional(nasty),
  title: optional(nasty),
  days: optional(number),
  landing: optional(fc.boolean()),
  ts: optional(timestamp),
});
const itemArb = fc.record({
  product_id: optional(nasty),
  price: optional(number),
  quantity: optional(number),
  subtotal: optional(number),
});
const orderArb = fc.record({
  ts: optional(timestamp),
  total: optional(number),
  subtotal: optional(number),
  discount: optional(number),
  tax: optional(number),
  coupon_code: optional(nasty),
  items: optional(fc.array(itemArb, { maxLength: 2 })),
});
const productArb = fc.record({
  name: optional(nasty),
  brand: optional(nasty),
  category: optional(nasty),
  price: optional(number),
});
const batchArb = fc.record({
  profiles: fc.array(profileArb, { minLength: 4, maxLength: 12 }),
  events: fc.array(eventArb, { minLength: 4, maxLength: 12 }),
  orders: fc.array(orderArb, { minLength: 4, maxLength: 12 }),
  products: fc.array(productArb, { minLength: 4, maxLength: 12 }),
});

type Row = Record<string, unknown>;
type Gen<A> = A extends fc.Arbitrary<infer T> ? T : never;
/** What the export must show for an accepted record: its key, and the value of each column checked. */
interface Expected {
  object: 'customers' | 'events' | 'orders' | 'products';
  key: string;
  values: Row;
}

// One wiring: the property reads the store after each case (scaled out, each read stops the processor).
describe('accepted means storable (property, embedded)', () => {
  let p: EmbeddedPlatform;
  let acc: TestAccount;
  let run = 0;

  beforeAll(async () => {
    p = await EmbeddedPlatform.start({ CDP_EXPORT_POLL_MS: '50' });
    acc = await p.createAccount();
    const fields = [
      { name: 'nick', type: 'text', display_name: 'Nick' },
      { name: 'score', type: 'number', display_name: 'Score' },
      { name: 'seen_at', type: 'timestamp', display_name: 'Seen at' },
      { name: 'vip', type: 'boolean', display_name: 'VIP' },
    ];
    const res = await postWithKey(p, acc.privateKey, '/v3/schema/objects/customers/fields', { fields });
    expect(res.status).toBe(201);
    // A field's column is added with the first record that carries it; until then an export of the
    // object fails on the missing column (left as found: exports, not ingest). One record makes them.
    const seed = { customer_id: 'seed', nick: 'n', score: 1, seen_at: 1, vip: true };
    expect(await send('/v3/profiles', { attributes: seed })).toBe(202);
    await eventually(
      async () =>
        (await p.scalar(acc.id, "SELECT count() AS n FROM {db}.customers WHERE customer_id = 'seed'")) === 1,
      30_000,
    );
  }, 60_000);
  afterAll(() => p.close(), 30_000);

  async function send(path: string, record: unknown): Promise<number> {
    const text = JSON.stringify(record).replaceAll(JSON.stringify(OVERFLOW), '1e400');
    const res = await p.raw(path, Buffer.from(text), {
      'content-type': 'application/json',
      'x-api-key': acc.publicKey,
    });
    if (res.status !== 202 && res.status !== 400)
      throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.status;
  }

  it('every record answered 202 reads back from chDB through CSV and Parquet exports as accepted', async () => {
    let acceptedTotal = 0;
    let refusedTotal = 0;
    const result = await fc.check(
      fc.asyncProperty(batchArb, async (batch) => {
        run += 1;
        const expected: Expected[] = [];
        const tag = `r${run}`;
        for (const [i, a] of batch.profiles.entries()) {
          const key = `${tag}-c${i}`;
          const attributes = defined({ customer_id: key, ...a });
          if ((await send('/v3/profiles', { attributes })) === 202)
            expected.push({ object: 'customers', key, values: profileValues(a) });
        }
        for (const [i, e] of batch.events.entries()) {
          const key = `${tag}-v${i}`;
          const data = defined({
            page: e.page,
            title: e.title,
            days_since_last_visit: e.days,
            landing: e.landing,
            ts: e.ts,
          });
          const record = defined({ type: e.type, action: e.action, identifiers: { vuid: key }, data });
          if ((await send('/v3/events', record)) === 202)
            expected.push({ object: 'events', key, values: eventValues(e) });
        }
        for (const [i, o] of batch.orders.entries()) {
          const key = `${tag}-o${i}`;
          const { ts, ...rest } = o;
          const order = defined({ order_id: key, ...rest, items: o.items?.map(defined) });
          const record = {
            type: 'order',
            action: 'purchase',
            identifiers: { vuid: key },
            data: defined({ ts, order }),
          };
          if ((await send('/v3/events', record)) === 202)
            expected.push({ object: 'orders', key, values: orderValues(o) });
        }
        for (const [i, pr] of batch.products.entries()) {
          const key = `${tag}-p${i}`;
          if ((await send('/v3/objects/products', defined({ product_id: key, ...pr }))) === 202)
            expected.push({ object: 'products', key, values: productValues(pr) });
        }
        const sent =
          batch.profiles.length + batch.events.length + batch.orders.length + batch.products.length;
        acceptedTotal += expected.length;
        refusedTotal += sent - expected.length;
        await processed(tag, expected);
        for (const format of ['CSV', 'Parquet'] as const) {
          const rows = await exported(format);
          for (const e of expected) {
            const row = rows[e.object].get(e.key);
            expect({ format, object: e.object, key: e.key, found: row !== undefined }).toEqual({
              format,
              object: e.object,
              key: e.key,
              found: true,
            });
            const got = Object.fromEntries(
              Object.entries(e.values).map(([c, want]) => [c, readAs(format, want, row![c])]),
            );
            const want = Object.fromEntries(
              Object.entries(e.values).map(([c, v]) => [c, format === 'CSV' && v === null ? '' : v]),
            );
            expect({ format, object: e.object, key: e.key, values: got }).toEqual({
              format,
              object: e.object,
              key: e.key,
              values: want,
            });
          }
        }
      }),
      { numRuns: 8, seed: 20261123, endOnFailure: true },
    );
    // The failing record and value are in the assertion's message; the whole generated batch is too long.
    if (result.failed) throw result.errorInstance;
    // The generators reach both sides of the line.
    expect(acceptedTotal).toBeGreaterThan(20);
    expect(refusedTotal).toBeGreaterThan(20);
  }, 120_000);

  /** Waits until the store holds every accepted record of the run (the export reads the store). */
  async function processed(tag: string, expected: Expected[]): Promise<void> {
    const count = (o: Expected['object']) => expected.filter((e) => e.object === o).length;
    const checks: [string, number][] = [
      [
        `SELECT count() AS n FROM {db}.customers FINAL WHERE startsWith(customer_id, '${tag}-c')`,
        count('customers'),
      ],
      [
        `SELECT count() AS n FROM {db}.events WHERE startsWith(identifiers['vuid'], '${tag}-v')`,
        count('events'),
      ],
      [`SELECT count() AS n FROM {db}.orders FINAL WHERE startsWith(order_id, '${tag}-o')`, count('orders')],
      [
        `SELECT count() AS n FROM {db}.products FINAL WHERE startsWith(product_id, '${tag}-p')`,
        count('products'),
      ],
    ];
    await eventually(async () => {
      for (const [sql, n] of checks) {
        const got = await p.scalar(acc.id, sql);
        if (got !== n) throw new Error(`${sql}: ${got} of ${n}`);
      }
      return true;
    }, 30_000);
  }

  /** Exports the four objects and returns their rows by key (customer_id, vuid, order_id, product_id). */
  async function exported(format: 'CSV' | 'Parquet'): Promise<Record<Expected['object'], Map<string, Row>>> {
    const exported = await runExport(p, acc.privateKey, {
      format,
      objects: ['customers', 'events', 'orders', 'products'],
    });
    const { state, errors } = exported.record;
    expect({ state, errors }).toEqual({ state: 'completed', errors: undefined });
    const out = { customers: new Map(), events: new Map(), orders: new Map(), products: new Map() } as Record<
      Expected['object'],
      Map<string, Row>
    >;
    for (const f of exported.manifest().files) {
      const bytes = readFileSync(exported.fileOf(f));
      const rows: Row[] =
        format === 'CSV' ? parse<Row>(bytes, { columns: true, relax_quotes: false }) : parquetRows(bytes);
      for (const row of rows) {
        const key =
          f.object === 'customers'
            ? row.customer_id
            : f.object === 'events'
              ? (JSON.parse(String(row.identifiers)) as Record<string, string>).vuid
              : f.object === 'orders'
                ? row.order_id
                : row.product_id;
        if (typeof key === 'string') out[f.object as Expected['object']].set(key, row);
      }
    }
    return out;
  }
});

/** A value read from a file, in the form of the value expected of it (numbers, times, booleans). */
function readAs(format: 'CSV' | 'Parquet', want: unknown, raw: unknown): unknown {
  if (raw === undefined) return '<no such column>';
  const empty = raw === null || (format === 'CSV' && raw === '');
  if (want !== null && typeof want === 'object' && 'number' in want) return empty ? null : num(Number(raw));
  if (want !== null && typeof want === 'object' && 'ms' in want) {
    if (empty) return null;
    return time(typeof raw === 'string' ? Date.parse(raw) : Number(raw));
  }
  if (typeof want === 'boolean' && format === 'CSV')
    return raw === 'true' ? true : raw === 'false' ? false : raw;
  return raw;
}

/** The forms a value takes in both files: text in CSV, typed in Parquet. */
// -0 is sent as 0 (JSON has no negative zero).
const num = (value: number) => ({ number: value === 0 ? 0 : value });
const time = (ms: number) => ({ ms: ms === 0 ? 0 : ms });

function profileValues(a: Gen<typeof profileArb>): Row {
  const out: Row = {};
  for (const f of ['name', 'city', 'phone', 'nick'] as const) {
    // "" is no value for built-in and custom (`nick`) fields alike (spec "Data types": null is empty).
    if (a[f] !== undefined) out[f] = a[f] === '' ? null : a[f];
  }
  if (a.score !== undefined) out.score = num(Number(a.score));
  if (a.seen_at !== undefined) out.seen_at = time(parseTimestamp(a.seen_at)!);
  if (a.vip !== undefined) out.vip = a.vip === true || a.vip === 1 || a.vip === '1' || a.vip === 'true';
  return out;
}

function eventValues(e: Gen<typeof eventArb>): Row {
  const out: Row = { type: e.type, action: e.action ?? '' };
  if (e.page !== undefined) out.page = e.page;
  if (e.title !== undefined) out.title = e.title;
  if (e.days !== undefined) out.days_since_last_visit = num(e.days as number);
  if (e.landing !== undefined) out.landing = e.landing;
  if (e.ts !== undefined) out.ts = time(parseTimestamp(e.ts)!);
  return out;
}

function orderValues(o: Gen<typeof orderArb>): Row {
  const itemsSubtotal = o.items?.some((i) => typeof i.subtotal === 'number')
    ? o.items.reduce((sum, i) => sum + Math.round(((i.subtotal as number) ?? 0) * 10_000), 0) / 10_000
    : 0;
  // An order's running tally counts in 1/10000 units: more decimals count rounded (README "API notes").
  const tally = (amount: number) => Math.round(amount * 10_000) / 10_000;
  const out: Row = {
    total: num(tally((o.total as number | undefined) ?? 0)),
    subtotal: num(o.subtotal === undefined ? itemsSubtotal : tally(o.subtotal as number)),
    discount: o.discount === undefined ? null : num(o.discount as number),
    tax: o.tax === undefined ? null : num(o.tax as number),
    coupon_code: o.coupon_code === undefined || o.coupon_code === '' ? null : o.coupon_code,
  };
  if (o.ts !== undefined) out.ts = time(parseTimestamp(o.ts)!);
  return out;
}

function productValues(pr: Gen<typeof productArb>): Row {
  const out: Row = {};
  for (const f of ['name', 'brand', 'category'] as const) {
    if (pr[f] !== undefined) out[f] = pr[f] === '' ? null : pr[f];
  }
  if (pr.price !== undefined) out.price = num(pr.price as number);
  return out;
}
