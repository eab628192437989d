import { ADMIN_TOKEN, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { postWithKey } from './support/api-calls.js';

type Product = Record<string, unknown> & { product_id: string; recommendation_type: string };

const LAPTOPS = 'Electronics > Computers > Laptops';
const ACCESSORIES = 'Electronics > Computers > Accessories';
const IMG = 'https://img.example.com/p.png';

/** The catalogue: every rule of the filters leaves a different set out. */
const PRODUCTS = [
  { product_id: 'lap1', category: LAPTOPS, price: 1000, image_url: IMG, in_stock: true, rating: 4.5 },
  { product_id: 'lap2', category: LAPTOPS, price: 800, in_stock: false, rating: 3 },
  { product_id: 'mouse', category: ACCESSORIES, price: 20, image_url: IMG, in_stock: true },
  { product_id: 'bag', category: ACCESSORIES, image_url: IMG, in_stock: true },
  { product_id: 'pan', category: 'Home > Kitchen', price: 30, image_url: IMG, in_stock: true },
  { product_id: 'knife', category: 'Home > Kitchen', price: 15 },
  { product_id: 'book', category: 'Books', price: 12, image_url: IMG, in_stock: true },
  { product_id: 'tv', category: 'Electronics > Computersish', price: 500, image_url: IMG, in_stock: true },
];

/**
 * `GET /v3/recommendations/products` end to end on both wirings: a small catalogue with planted
 * co-purchases (laptop + mouse), co-interest (laptop + bag views) and a best seller (pan), then each
 * identifier, the page's products, exclusions, the operator's rules, sorting and the 400s.
 */
describe.each(WIRINGS)('recommendations (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;
  let other: TestAccount;

  const send = (key: string, path: string, body: unknown) => postWithKey(p, key, path, body);
  const recs = (query: string, key = acc.publicKey) =>
    p.http().get(`/v3/recommendations/products?${query}`).set('x-api-key', key);
  const ids = async (query: string, key = acc.publicKey): Promise<string[]> => {
    const res = await recs(query, key);
    expect(res.status).toBe(200);
    return (res.body as Product[]).map((r) => r.product_id);
  };
  const setRules = async (rules: unknown, account = acc) =>
    p
      .http()
      .put(`/admin/v1/accounts/${account.id}/recommendation-rules`)
      .set('authorization', `Bearer ${ADMIN_TOKEN}`)
      .send(rules as object);
  const purchase = (identifiers: Record<string, string>, orderId: string, items: string[], quantity = 1) => ({
    type: 'order',
    action: 'purchase',
    identifiers,
    data: {
      order: {
        order_id: orderId,
        items: items.map((product_id) => ({ product_id, price: 10, quantity, subtotal: 10 * quantity })),
      },
    },
  });
  const view = (identifiers: Record<string, string>, product_id: string, action = 'detail') => ({
    type: 'product',
    action,
    identifiers,
    data: { product_id },
  });

  beforeAll(async () => {
    ({ p, acc } = await startWithAccount(start, 'recs'));
    for (const field of [
      { name: 'in_stock', type: 'boolean', display_name: 'In stock' },
      { name: 'rating', type: 'number', display_name: 'Rating' },
    ]) {
      const res = await postWithKey(p, acc.privateKey, '/v3/schema/objects/products/fields', field);
      expect(res.status).toBe(201);
    }
    // A custom identifier names a customer like the built-in ones (issue 20).
    await send(acc.privateKey, '/v3/schema/identifiers', {
      name: 'loyalty_id',
      display_name: 'Loyalty ID',
      merge_confidence: 'high',
    }).expect(201);
    other = await p.createAccount('recs-other');
    // The custom product fields are ingested with the base ones: nothing is dropped.
    const ingested = await send(acc.publicKey, '/v3/objects/products', PRODUCTS).expect(202);
    expect(ingested.body).not.toHaveProperty('dropped');
    await send(other.publicKey, '/v3/objects/products', [
      { product_id: 'other1', category: 'Books', price: 5 },
      { product_id: 'other2', category: 'Books', price: 6 },
    ]).expect(202);
    const events: unknown[] = [];
    for (let i = 0; i < 5; i++)
      events.push(purchase({ email: `bundle${i}@x.com` }, `b${i}`, ['lap1', 'mouse']));
    for (let i = 0; i < 3; i++) {
      events.push(view({ email: `browser${i}@x.com` }, 'lap1'), view({ email: `browser${i}@x.com` }, 'bag'));
    }
    for (let i = 0; i < 6; i++) events.push(purchase({ email: `cook${i}@x.com` }, `k${i}`, ['pan'], 3));
    events.push(
      purchase({ email: 'misc@x.com' }, 'm1', ['lap2', 'bag', 'knife', 'book', 'tv']),
      purchase({ email: 'ann@x.com' }, 'ann1', ['lap1']),
      purchase({ customer_id: 'cust-7' }, 'c7', ['lap1']),
      view({ vuid: 'vuid-9' }, 'lap1', 'add_to_cart'),
      view({ svc_alias_cart: 'cart-3' }, 'lap1'),
      purchase({ loyalty_id: 'L-9' }, 'l9', ['lap1']),
    );
    await send(acc.publicKey, '/v3/events', events).expect(202);
    await send(other.publicKey, '/v3/events', [
      purchase({ email: 'ann@x.com' }, 'o1', ['other1', 'other2']),
    ]).expect(202);
    // The tables are refreshed asynchronously: wait until the bundle shows.
    await eventually(async () => (await ids('email=ann@x.com'))[0] === 'mouse', 30_000);
    // Best sellers are kept until a newer refresh generation is seen: wait until they show too.
    await eventually(async () => (await ids('email=nobody@x.com'))[0] === 'pan');
  }, 90_000);

  afterAll(() => p?.close());

  it('recommends from the customer’s own history, whichever identifier names them', async () => {
    const ann = (await recs('email=ann@x.com')).body as Product[];
    expect(ann[0]).toMatchObject({ product_id: 'mouse', recommendation_type: 'personal' });
    expect(ann.map((r) => r.product_id)).not.toContain('lap1'); // bought
    for (const query of ['customer_id=cust-7', 'vuid=vuid-9', 'svc_alias_cart=cart-3', 'loyalty_id=L-9']) {
      const body = (await recs(query)).body as Product[];
      expect(body[0]).toMatchObject({ product_id: 'mouse', recommendation_type: 'personal' });
      expect(body.filter((r) => r.recommendation_type === 'personal').map((r) => r.product_id)).toEqual(
        expect.arrayContaining(['mouse', 'bag']),
      );
    }
    // The private key is accepted too.
    expect((await recs('email=ann@x.com', acc.privateKey)).status).toBe(200);
  });

  it('answers best sellers (units, then revenue) for a customer nobody knows, never an error', async () => {
    const body = (await recs('email=nobody@x.com&limit=100')).body as Product[];
    expect(body[0]).toMatchObject({ product_id: 'pan', recommendation_type: 'best_sellers' });
    expect(body.every((r) => r.recommendation_type === 'best_sellers')).toBe(true);
    expect(new Set(body.map((r) => r.product_id))).toEqual(new Set(PRODUCTS.map((x) => x.product_id)));
    expect((await recs('')).status).toBe(200);
  });

  it('answers every base and custom product field', async () => {
    const body = (await recs('email=nobody@x.com&limit=100')).body as Product[];
    const lap1 = body.find((r) => r.product_id === 'lap1')!;
    expect(lap1).toMatchObject({ category: LAPTOPS, image_url: IMG, in_stock: true, price: 1000 });
    expect(Number(lap1.rating)).toBe(4.5);
    for (const field of ['name', 'brand', 'sku', 'upc', 'parent_product_id']) expect(lap1[field]).toBeNull();
    expect(body.find((r) => r.product_id === 'knife')).toMatchObject({ in_stock: null, image_url: null });
  });

  it('puts products related to product_ids first and leaves those out', async () => {
    const body = (await recs('product_ids=lap1&email=nobody@x.com')).body as Product[];
    expect(body[0]).toMatchObject({ product_id: 'mouse', recommendation_type: 'contextual' });
    expect(body.map((r) => r.product_id)).not.toContain('lap1');
    const two = await ids('product_ids=lap1,%20mouse&limit=100');
    expect(two).not.toContain('lap1');
    expect(two).not.toContain('mouse');
  });

  it('leaves out a purchase made a moment ago', async () => {
    await send(acc.publicKey, '/v3/events', [purchase({ email: 'ann@x.com' }, 'ann2', ['pan'])]).expect(202);
    await eventually(async () => !(await ids('email=ann@x.com&limit=100')).includes('pan'));
    expect(await ids('email=nobody@x.com&limit=100')).toContain('pan');
  });

  it('gives a merged customer the history of both: both purchases left out, both affinities used', async () => {
    // One bought a laptop (bought with a mouse by others), the other a book (bought with a knife, a tv).
    await send(acc.publicKey, '/v3/events', [
      purchase({ email: 'merge-a@x.com' }, 'ma1', ['lap1']),
      purchase({ customer_id: 'merge-b' }, 'mb1', ['book']),
    ]).expect(202);
    const personal = async (query: string) =>
      ((await recs(`${query}&limit=100`)).body as Product[])
        .filter((r) => r.recommendation_type === 'personal')
        .map((r) => r.product_id);
    await eventually(async () => (await personal('email=merge-a@x.com'))[0] === 'mouse');
    await eventually(async () => (await personal('customer_id=merge-b')).includes('knife'));
    expect(await personal('customer_id=merge-b')).not.toContain('mouse'); // not yet: the laptop is the other's
    // An event carrying both identifiers ties them together.
    await send(acc.publicKey, '/v3/events', [
      { type: 'account', action: 'login', identifiers: { email: 'merge-a@x.com', customer_id: 'merge-b' } },
    ]).expect(202);
    for (const query of ['email=merge-a@x.com', 'customer_id=merge-b']) {
      await eventually(async () => {
        const answer = await ids(`${query}&limit=100`);
        return !answer.includes('lap1') && !answer.includes('book');
      });
      // Related to the laptop (the mouse) and to the book (the knife, the tv): both histories count.
      expect(await personal(query)).toEqual(expect.arrayContaining(['mouse', 'knife', 'tv']));
    }
  });

  it('applies every rule the operator sets', async () => {
    const all = async () => new Set(await ids('email=nobody@x.com&limit=100'));
    const without = (...gone: string[]) =>
      new Set(PRODUCTS.map((x) => x.product_id).filter((id) => !gone.includes(id)));
    const cases: [unknown, Set<string>][] = [
      [{ exclude_categories: ['Home'] }, without('pan', 'knife')],
      [{ exclude_categories: ['Electronics > Computers'] }, without('lap1', 'lap2', 'mouse', 'bag')],
      [{ require_image: true }, without('lap2', 'knife')],
      [{ require_price: true }, without('bag')],
      [{ min_price: 20, max_price: 900 }, new Set(['lap2', 'mouse', 'pan', 'tv'])],
      [{ require_true: ['in_stock'] }, without('lap2', 'knife')],
    ];
    try {
      for (const [rules, expected] of cases) {
        const res = await setRules(rules);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ rules });
        expect(await all()).toEqual(expected);
        // Personal and contextual answers go through the same rules.
        if (expected.has('mouse')) continue;
        expect(await ids('email=ann@x.com&product_ids=lap1')).not.toContain('mouse');
      }
    } finally {
      expect((await setRules({})).status).toBe(200);
    }
    expect(await all()).toEqual(without());
  });

  it('is in the OpenAPI document', async () => {
    const openapi = await p.http().get('/openapi.json');
    expect(Object.keys(openapi.body.paths)).toEqual(
      expect.arrayContaining([
        '/v3/recommendations/products',
        '/admin/v1/accounts/{id}/recommendation-rules',
      ]),
    );
  });

  it('refuses rules it cannot apply', async () => {
    const res = await setRules({ require_true: ['rating'], min_price: 'x', colour: 'red' });
    expect(res.status).toBe(400);
    expect(res.body.detail.invalids.map((i: { field: string }) => i.field).sort()).toEqual([
      'colour',
      'min_price',
      'require_true',
    ]);
    expect((await setRules({ min_price: 5, max_price: 1 })).status).toBe(400);
    const noAdmin = await p.http().get(`/admin/v1/accounts/${acc.id}/recommendation-rules`);
    expect(noAdmin.status).toBe(401);
  });

  it('sorts, orders and limits', async () => {
    const byPrice = (await recs('email=nobody@x.com&limit=100&sort=price')).body as Product[];
    const prices = byPrice.map((r) => r.price as number | null);
    expect(prices.at(-1)).toBeNull(); // nulls last
    const known = prices.filter((x): x is number => x !== null);
    expect(known).toEqual([...known].sort((a, b) => a - b));
    const desc = (await recs('email=nobody@x.com&limit=100&sort=price&order=desc')).body as Product[];
    expect(desc[0]!.product_id).toBe('lap1');
    expect(await ids('email=nobody@x.com&limit=1')).toEqual(['pan']);
    const ranked = await ids('email=nobody@x.com&limit=3');
    expect(await ids('email=nobody@x.com&limit=3&order=asc')).toEqual([...ranked].reverse());
    expect(await ids('email=nobody@x.com&sort=rating&order=desc&limit=100')).toEqual(
      expect.arrayContaining(['lap1', 'lap2']),
    );
    expect((await ids('email=nobody@x.com&sort=rating&order=desc&limit=100')).slice(0, 2)).toEqual([
      'lap1',
      'lap2',
    ]);
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=1.5', 'limit'],
    ['order=up', 'order'],
    ['sort=colour', 'sort'],
    ['email=a@x.com&email=b@x.com', 'email'],
  ])('answers 400 to %s', async (query, field) => {
    const res = await recs(query);
    expect(res.status).toBe(400);
    expect(res.body.detail.invalids).toEqual([{ field, reason: expect.any(String) }]);
  });

  it('is rate-limited per account, by the recommendations family', async () => {
    const limited = await p.createAccount('recs-limited');
    const path = `/admin/v1/accounts/${limited.id}/rate-limits`;
    const set = await p
      .http()
      .patch(path)
      .set('authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ recommendations: 2 });
    expect(set.status).toBe(200);
    // Until the first refusal, however slow the run (tokens come back at 2 a second).
    let refused: Awaited<ReturnType<typeof recs>> | undefined;
    for (let i = 0; i < 100 && !refused; i++) {
      const res = await recs('email=nobody@x.com', limited.publicKey);
      if (res.status === 429) refused = res;
      else expect(res.status).toBe(200);
    }
    expect(refused?.headers['retry-after']).toBeDefined();
    expect(refused?.headers['ratelimit-limit']).toBe('2');
    expect((await recs('email=nobody@x.com')).status).toBe(200); // another account's bucket
  });

  it('answers [] for an account with nothing to recommend, and never another account’s products', async () => {
    const cold = await p.createAccount('recs-cold');
    const res = await recs('email=ann@x.com', cold.publicKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    let theirs: string[] = [];
    await eventually(async () => {
      theirs = await ids('email=nobody@x.com&limit=100', other.publicKey);
      return theirs.length === 2;
    });
    expect(new Set(theirs)).toEqual(new Set(['other1', 'other2']));
    expect(await ids('email=ann@x.com&limit=100', other.publicKey)).toEqual([]); // bought both there
    expect(await ids('email=nobody@x.com&limit=100&product_ids=other1')).not.toContain('other2');
    expect(await ids('email=ann@x.com&limit=100')).not.toContain('other1');
  });
});
