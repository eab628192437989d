import { jest } from '@jest/globals';
import { allFaultPoints } from '@cdp/faults';
import type { ClickHouseStore } from '@cdp/store';
import { EmbeddedRig, ScaledRig, drained, get, post, type CrashRig } from './support/crash-rig.js';
import { eventually } from './support/eventually.js';
import { storesObject } from './support/schema-objects.js';

/**
 * Crash consistency at every write boundary (issue "A 202 is a promise"): for each fault point of the
 * catalogue (libs/faults/src/points.ts, so a new boundary joins this suite by itself), the processing
 * side is started with `<point>:kill@1`, sent a round of requests that cross every boundary (new
 * customers, a merge, a customer_id conflict, an order, a subscription, an opt-out, an account object,
 * a product), SIGKILLed there, and started again without the fault. Then everything acknowledged
 * must be there: each event once, each customer readable with its fields and live exactly once in the
 * store's customers (a merged one folded into its survivor), each order tallied once.
 */
jest.setTimeout(600_000);

const POINTS = allFaultPoints();
const NEW_CUSTOMERS = 6;

/** What a round's acknowledged requests promise. */
interface Round {
  point: string;
  /** Emails of new customers acknowledged, with the customer_id some carry. */
  customers: Map<string, string | undefined>;
  /** Pages of acknowledged pageviews: each must be stored once. */
  pages: string[];
  /** The profile merged into the round's first customer, if the merge was acknowledged. */
  merged?: { customerId: string; into: string };
  conflict?: { customerId: string; email: string };
  order?: { orderId: string; email: string };
  subscribed?: string;
  /** A push token whose consent (POST /v3/consent, false) was acknowledged. */
  tokenConsent?: string;
  /** A customer an opt-out was sent for (redacted if it was applied): its fields may be gone by design. */
  optedOut?: string;
  storeId?: string;
  productId?: string;
}

/** Sends a round's requests one after the other; keeps what was acknowledged. */
async function sendRound(rig: CrashRig, point: string, tag: string): Promise<Round> {
  const { publicKey, privateKey } = rig.account;
  const round: Round = { point, customers: new Map(), pages: [] };
  const email = (i: number | string) => `${tag}-${i}@x.com`;

  // 1. New customers by events, two of them with a customer_id.
  const first = [
    ...Array.from({ length: NEW_CUSTOMERS }, (_, i) => ({ email: email(i) })),
    { email: email('e1'), customer_id: `${tag}-c1` },
    { email: email('e2'), customer_id: `${tag}-c2` },
  ].map((identifiers, i) => ({ type: 'pageview', identifiers, data: { page: `/${tag}/1/${i}` } }));
  if ((await post(rig, '/v3/events', first, publicKey)) !== 202) return round;
  first.forEach((e) => {
    round.customers.set(e.identifiers.email, (e.identifiers as { customer_id?: string }).customer_id);
    round.pages.push(e.data.page);
  });

  // 2. A customer made by a profile, with a field of its own: it will be merged away.
  const loser = `${tag}-l`;
  if (
    (await post(rig, '/v3/profiles', { attributes: { customer_id: loser, first_name: 'Lo' } }, publicKey)) !==
    202
  )
    return round;

  // 3. A merge (the loser's customer_id with the first customer's email), a conflict (two customers
  //    with different customer_ids never merge) and an order.
  const third = [
    { type: 'pageview', identifiers: { email: email(0), customer_id: loser }, data: { page: `/${tag}/3/0` } },
    {
      type: 'pageview',
      identifiers: { email: email('e2'), customer_id: `${tag}-c1` },
      data: { page: `/${tag}/3/1` },
    },
    {
      type: 'order',
      action: 'purchase',
      identifiers: { email: email(1) },
      data: {
        order: {
          order_id: `${tag}-o`,
          total: 100,
          items: [{ product_id: `${tag}-p`, price: 50, quantity: 2, subtotal: 100 }],
        },
      },
    },
  ];
  if ((await post(rig, '/v3/events', third, publicKey)) !== 202) return round;
  round.pages.push(`/${tag}/3/0`, `/${tag}/3/1`);
  round.merged = { customerId: loser, into: email(0) };
  round.conflict = { customerId: `${tag}-c1`, email: email('e1') };
  round.order = { orderId: `${tag}-o`, email: email(1) };

  // 4. A subscription (answered 200 once durable).
  if (
    (await post(
      rig,
      '/v3/lists/subscriptions',
      { list_id: 'news', email: email(2), subscribed: true },
      publicKey,
    )) !== 200
  )
    return round;
  round.subscribed = email(2);

  // 4b. A push token's consent (per-identifier state, its own table).
  const token = `${tag}-tok`;
  const consent = { identifier_field_name: 'ios_push_tokens', identifier_value: token, consent: false };
  if ((await post(rig, '/v3/consent', [consent], publicKey)) !== 202) return round;
  round.tokenConsent = token;

  // 5. A compliance opt-out of the last new customer. A request the server died answering may still
  //    have been stored and applied: the customer counts as redacted once the opt-out is sent.
  round.optedOut = email(NEW_CUSTOMERS - 1);
  if (
    (await post(
      rig,
      '/v3/optout',
      { requester: 'dpo@x.com', email: email(NEW_CUSTOMERS - 1) },
      privateKey,
    )) !== 202
  )
    return round;

  // 6. An account object's record, and a product.
  if ((await post(rig, '/v3/objects/stores', { store_id: tag, city: 'Oslo' }, publicKey)) !== 202)
    return round;
  round.storeId = tag;
  if ((await post(rig, '/v3/objects/products', { product_id: `${tag}-p`, name: 'Pen' }, publicKey)) !== 202)
    return round;
  round.productId = `${tag}-p`;
  return round;
}

type Attributes = Record<string, unknown>;

async function profile(rig: CrashRig, query: string): Promise<Attributes | undefined> {
  const res = await get(rig, `/v3/profiles?${query}`);
  return res.status === 200 ? (res.body as { attributes: Attributes }).attributes : undefined;
}

/** What a user reads back through the API once the bus is drained. */
async function checkReads(rig: CrashRig, round: Round): Promise<void> {
  for (const [email, customerId] of round.customers) {
    if (email === round.optedOut) continue;
    const expected: Attributes = { email };
    if (customerId) expected.customer_id = customerId;
    if (round.merged?.into === email)
      Object.assign(expected, { customer_id: round.merged.customerId, first_name: 'Lo' });
    await eventually(async () =>
      expect(await profile(rig, `email=${encodeURIComponent(email)}`)).toMatchObject(expected),
    );
  }
  if (round.merged) {
    const { customerId, into } = round.merged;
    await eventually(async () =>
      expect(await profile(rig, `customer_id=${customerId}`)).toMatchObject({
        email: into,
        first_name: 'Lo',
      }),
    );
  }
  if (round.conflict) {
    // The conflicting record did not move the other customer's email onto this one.
    const { customerId, email } = round.conflict;
    await eventually(async () =>
      expect(await profile(rig, `customer_id=${customerId}`)).toMatchObject({ email }),
    );
  }
  if (round.tokenConsent) {
    await eventually(async () => {
      const res = await get(rig, `/v3/consent/ios_push_tokens?id=${round.tokenConsent}`);
      expect((res.body as { consent: boolean | null }).consent).toBe(false);
    });
  }
  if (round.subscribed) {
    const query = `/v3/lists/subscriptions?email=${encodeURIComponent(round.subscribed)}`;
    await eventually(async () => {
      const res = await get(rig, query);
      const lists = (res.body as { subscriptions: { list_id: string; subscribed: boolean }[] }).subscriptions;
      expect(lists.find((l) => l.list_id === 'news')?.subscribed).toBe(true);
    });
  }
}

interface StoreFacts {
  pages: Map<string, number>;
  doubledEvents: number;
  liveByEmail: Map<string, number>;
  liveByCustomerId: Map<string, { n: number; email: string | null }>;
  orders: Map<string, { rows: number; total: number; changes: number; items: number }>;
  stores: Map<string, number>;
  products: Map<string, number>;
  unfinished: number;
}

async function storeFacts(store: ClickHouseStore, account: string): Promise<StoreFacts> {
  const q = <T>(sql: string) => store.query<T>(account, sql);
  const pages = await q<{ page: string; n: string }>(
    'SELECT page, count() AS n FROM {db}.events WHERE page IS NOT NULL GROUP BY page',
  );
  const doubled = await q<{ n: string }>(
    'SELECT count() AS n FROM (SELECT event_id FROM {db}.events GROUP BY event_id HAVING count() > 1)',
  );
  const live = await q<{ email: string | null; customer_id: string | null; n: string }>(
    'SELECT email, customer_id, count() AS n FROM {db}.customers FINAL WHERE merged_into IS NULL GROUP BY email, customer_id',
  );
  const liveByEmail = new Map<string, number>();
  const liveByCustomerId = new Map<string, { n: number; email: string | null }>();
  for (const r of live) {
    if (r.email) liveByEmail.set(r.email, (liveByEmail.get(r.email) ?? 0) + Number(r.n));
    if (r.customer_id) {
      const prev = liveByCustomerId.get(r.customer_id);
      liveByCustomerId.set(r.customer_id, { n: (prev?.n ?? 0) + Number(r.n), email: r.email });
    }
  }
  const orders = await q<{ order_id: string; rows: string; total: string; changes: string; items: string }>(
    `SELECT o.order_id AS order_id, o.rows AS rows, o.total AS total,
            (SELECT count() FROM {db}.order_changes c WHERE c.order_id = o.order_id) AS changes,
            (SELECT count() FROM {db}.line_items l WHERE l.order_id = o.order_id) AS items
     FROM (SELECT order_id, count() AS rows, any(total) AS total FROM {db}.orders FINAL GROUP BY order_id) o`,
  );
  const stores = await q<{ store_id: string; n: string }>(
    'SELECT store_id, count() AS n FROM {db}.obj_stores FINAL GROUP BY store_id',
  );
  const products = await q<{ product_id: string; n: string }>(
    'SELECT product_id, count() AS n FROM {db}.products FINAL GROUP BY product_id',
  );
  return {
    pages: new Map(pages.map((r) => [r.page, Number(r.n)])),
    doubledEvents: Number(doubled[0]!.n),
    liveByEmail,
    liveByCustomerId,
    orders: new Map(
      orders.map((r) => [
        r.order_id,
        { rows: Number(r.rows), total: Number(r.total), changes: Number(r.changes), items: Number(r.items) },
      ]),
    ),
    stores: new Map(stores.map((r) => [r.store_id, Number(r.n)])),
    products: new Map(products.map((r) => [r.product_id, Number(r.n)])),
    unfinished: (await store.unfinishedMessages(account)).length,
  };
}

/** What the store must hold for a round: a list of broken promises (empty when all is well). */
function checkStore(facts: StoreFacts, round: Round): string[] {
  const broken: string[] = [];
  const at = (what: string) => broken.push(`${round.point}: ${what}`);
  for (const page of round.pages)
    if (facts.pages.get(page) !== 1) at(`event ${page} stored ${facts.pages.get(page) ?? 0}×`);
  for (const email of round.customers.keys()) {
    if (email === round.optedOut) continue;
    if (facts.liveByEmail.get(email) !== 1)
      at(`customer ${email} live ${facts.liveByEmail.get(email) ?? 0}×`);
  }
  if (round.merged) {
    const live = facts.liveByCustomerId.get(round.merged.customerId);
    if (live?.n !== 1 || live.email !== round.merged.into)
      at(
        `merged customer ${round.merged.customerId} not folded into ${round.merged.into}: ${JSON.stringify(live)}`,
      );
  }
  if (round.order) {
    const o = facts.orders.get(round.order.orderId);
    if (!o || o.rows !== 1 || o.total !== 100 || o.changes !== 1 || o.items !== 1)
      at(`order ${round.order.orderId}: ${JSON.stringify(o)}`);
  }
  if (round.storeId && facts.stores.get(round.storeId) !== 1) at(`object ${round.storeId} missing`);
  if (round.productId && facts.products.get(round.productId) !== 1) at(`product ${round.productId} missing`);
  return broken;
}

describe.each([
  ['embedded', () => EmbeddedRig.create()],
  ['scaled', () => ScaledRig.create()],
] as const)('crash consistency at every write boundary (%s)', (_name, create) => {
  let rig: CrashRig;
  const rounds: Round[] = [];

  beforeAll(async () => {
    rig = await create();
    const key = rig.account.privateKey;
    expect(await post(rig, '/v3/lists', { name: 'News' }, key)).toBe(201);
    expect(await post(rig, '/v3/schema/objects', storesObject('text'), key)).toBe(201);
  }, 120_000);
  afterAll(() => rig?.close(), 60_000);

  it.each(POINTS.map((p, i) => [p, i] as const))(
    'kill at %s: redelivery completes every table',
    async (point, i) => {
      await rig.stop();
      await rig.start(`${point}:kill@1`);
      const round = await sendRound(rig, point, `${rig.name.slice(0, 1)}${i}`);
      rounds.push(round);
      // The workload crosses every boundary: a point never reached is a boundary this suite misses.
      expect({ point, died: await rig.died(30_000) }).toEqual({ point, died: true });
      await rig.start();
      await drained(rig);
      await checkReads(rig, round);
    },
  );

  it('holds every acknowledged event once, every acknowledged customer live once, every order once', async () => {
    expect(rounds).toHaveLength(POINTS.length);
    const facts = await rig.withStore((store) => storeFacts(store, rig.account.id));
    const broken = rounds.flatMap((r) => checkStore(facts, r));
    expect(broken).toEqual([]);
    expect(facts.doubledEvents).toBe(0);
    expect(facts.unfinished).toBe(0);
    const acknowledged = rounds.reduce((n, r) => n + r.customers.size, 0);
    expect(acknowledged).toBeGreaterThan(0);
  });
});
