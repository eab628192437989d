import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { AccountsService } from '@cdp/accounts';
import { Buckets } from '@cdp/buckets';
import { EventBus } from '@cdp/bus';
import { configureFaults, parseFaults } from '@cdp/faults';
import { BulkLoader, type ActivityRecord } from '@cdp/loader';
import { createLogger } from '@cdp/logger';
import { MetadataStore } from '@cdp/metadata';
import { SchemaRegistry } from '@cdp/schema';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { S3Server } from './support/s3-server.js';
import { readStore } from './support/store-checks.js';
import { type Platform, WIRINGS } from './support/wirings.js';
import { completedExport } from './support/exports.js';
import { postWithKey } from './support/api-calls.js';

type Row = Record<string, unknown>;

const lines = (...rows: string[]) => rows.map((r) => `${r}\n`).join('');
const FINAL = ['completed', 'rejected', 'failed'];

/** The 1% edge: `invalid` bad lines among `total` pageviews of `page`. */
function edgeFile(page: string, total: number, invalid: number): string {
  const rows = ['type,email,page'];
  for (let i = 0; i < total - invalid; i++) rows.push(`pageview,edge${i}@x.com,${page}`);
  rows.push(`pageview,extra@x.com,${page},one too many`);
  rows.push(`pageview,"line\nbreak@x.com",${page}`);
  for (let i = 2; i < invalid; i++) rows.push(`pageview,not-an-email-${i},${page}`);
  return lines(...rows);
}

const ORDERS = lines(
  'customer_id,action,order_id,ts,total,subtotal,coupon_code,item_product_id,item_price,item_quantity,item_subtotal,gift_note,item_color',
  'c1,purchase,o1,2024-02-01T10:00:00Z,30,,SAVE,p1,10,1,10,hello,red',
  ',,,,,,,p2,10,2,20,,blue',
  'c2,purchase,o2,2024-02-02T10:00:00Z,5,,,p1,5,1,5,note-a,',
  'c2,purchase,o2,2024-02-02T10:00:00Z,5,,,p2,5,1,5,note-b,',
  // The first line gives the subtotal: it is kept, not the items' sum.
  'c1,purchase,o3,2024-02-03T10:00:00Z,50,45,,p1,10,1,10,,',
  'c1,purchase,o3,2024-02-03T10:00:00Z,50,45,,p2,10,1,10,,',
  ...Array.from({ length: 200 }, (_, i) => `c3,purchase,ofill${i},2024-03-01,1,,,p1,1,1,1,,`),
);

const FILES: Record<string, string | Buffer> = {
  'svc_customers_1.csv': lines(
    'customer_id,email,first_name,tier,shoe_size',
    'c1,ann@x.com,Ann,3,42',
    'c2,bob@x.com,Bob,,43',
  ),
  // A custom identifier column (member_id, high confidence): a row naming it and an email merges the
  // customers they name, whichever file is loaded first, as the API would.
  'svc_customers_members.csv': lines('member_id,email,last_name', 'M-1,,Lee', 'M-1,ann@x.com,'),
  'svc_products_1.csv.gz': gzipSync(
    lines(
      'product_id,name,price,category,in_stock,colour',
      'p1,Shoe,19.99,Shoes > Running,true,red',
      'p2,"Hat, ""big""",5,Hats,0,',
    ),
  ),
  'svc_events_1.csv': lines(
    'type,action,email,ts,page,campaign_code',
    'pageview,,ann@x.com,2024-01-05,/home,SPRING',
    'video,play,bob@x.com,1704067200,/video,',
  ),
  'svc_orders_1.csv': ORDERS,
  'batch_events.svc': lines(
    JSON.stringify({
      type: 'event',
      data: { type: 'pageview', identifiers: { email: 'ann@x.com' }, data: { page: '/jsonl' } },
    }),
    JSON.stringify({
      type: 'order',
      data: {
        action: 'purchase',
        identifiers: { customer_id: 'c1' },
        data: {
          order: {
            order_id: 'oj1',
            items: [{ product_id: 'p1', sku: 'SKU1', quantity: '2', subtotal: '20.5', price: 10.25 }],
          },
        },
      },
    }),
  ),
  'spring_orders.svc': lines(
    JSON.stringify({
      type: 'order',
      data: {
        action: 'purchase',
        identifiers: { customer_id: 'c2' },
        data: {
          order: {
            order_id: 'ojl2',
            items: [{ product_id: 'p2', sku: 'S2', quantity: '3', subtotal: '15' }],
          },
        },
      },
    }),
  ),
  'new_customers.svc': lines(
    JSON.stringify({ type: 'customer', data: { customer_id: 'cj1', email: 'cj@x.com', tier: 7 } }),
  ),
  'feed_products.svc': lines(
    JSON.stringify({
      type: 'product',
      data: { product_id: 'pj1', name: 'Json product', price: 3, in_stock: 1, colour: 'blue' },
    }),
  ),
  // The original's own `{type, data}` bodies (those of /v2/entities and /v2/events): identifiers and
  // `action` inside `data`.
  'original_customers.svc': lines(
    JSON.stringify({
      type: 'customer',
      data: { customer_id: 'co1', email: 'co1@x.com', first_name: 'Olga', last_name: 'Orig', tier: 4 },
    }),
  ),
  'original_products.svc': lines(
    JSON.stringify({ type: 'product', data: { product_id: 'po1', name: 'Original product', price: 7.5 } }),
  ),
  'original_orders.svc': lines(
    JSON.stringify({
      type: 'order',
      data: {
        action: 'purchase',
        email: 'co1@x.com',
        order: {
          order_id: 'oo1',
          total: 12,
          items: [{ product_id: 'po1', sku: 'PO1', price: 6, quantity: '2', subtotal: '12' }],
        },
      },
    }),
  ),
  'original_events.svc': lines(
    JSON.stringify({ type: 'pageview', data: { email: 'co1@x.com', page: '/original', gift_note: 'hey' } }),
    JSON.stringify({ type: 'video', data: { action: 'play', email: 'co1@x.com', page: '/original-video' } }),
    JSON.stringify({ type: 'product', data: { action: 'detail', email: 'co1@x.com', product_id: 'po1' } }),
    JSON.stringify({
      type: 'order',
      data: {
        action: 'purchase',
        customer_id: 'co1',
        order: { order_id: 'oo2', items: [{ product_id: 'po1', price: 7.5, quantity: 1, subtotal: 7.5 }] },
      },
    }),
  ),
  'svc_events_edge_ok.csv': edgeFile('/edge-ok', 1000, 10),
  'svc_events_edge_bad.csv': edgeFile('/edge-bad', 1000, 11),
  'notes.txt': 'not a bulk file\n',
};

const RESTART_FILE = 'svc_events_restart.csv';
const UPLOADED = 'svc_events_uploaded.csv';
const RESTART = lines(
  'type,email,page',
  ...Array.from({ length: 1500 }, (_, i) => `pageview,r${i % 50}@x.com,/restart`),
);

/**
 * Bulk files end to end (spec "Bulk file ingestion") on both wirings: every data type, gzip, order
 * grouping, custom fields, the 1% edge both sides, a loader dying mid-file, two loaders, a duplicate drop,
 * the scratch bucket, a file name that is no upload. Everything is dropped at once, then checked.
 */
describe.each(WIRINGS)('bulk files (%s)', (wiring, start) => {
  let p: Platform;
  let acc: TestAccount;
  let buckets: Buckets;
  let second: BulkLoader | undefined;
  let s3: S3Server | undefined;
  let upload: { url: string; path: string; method: string };
  let activity: Map<string, ActivityRecord>;
  const events: Row[] = [];

  const api = (path: string) => p.http().get(path).set('x-api-key', acc.privateKey);
  const put = (name: string, body: string | Buffer) =>
    buckets.write('incoming', `${acc.publicKey}/${name}`, body);
  /** POST /v3/files/uploads over a real socket: the URL it issues must reach this very server. */
  async function issueUpload(name: unknown, key = acc.privateKey): Promise<{ status: number; body: Row }> {
    let base: string;
    if (p instanceof EmbeddedPlatform) {
      const server = p.app.getHttpServer();
      if (!server.address()) await p.app.listen({ port: 0, host: '127.0.0.1' });
      base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    } else base = p.api.baseUrl;
    const res = await fetch(`${base}/v3/files/uploads`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
    return { status: res.status, body: (await res.json()) as Row };
  }
  async function entries(): Promise<Map<string, ActivityRecord>> {
    const res = await api('/v3/activity?limit=100');
    expect(res.status).toBe(200);
    return new Map((res.body.activity as ActivityRecord[]).map((r) => [r.name, r]));
  }
  async function settled(names: string[]): Promise<Map<string, ActivityRecord>> {
    let all = new Map<string, ActivityRecord>();
    await eventually(
      async () => {
        all = await entries();
        return names.every((n) => FINAL.includes(all.get(n)?.state ?? ''));
      },
      45_000,
      100,
    );
    return all;
  }
  /** The store, read once (scaled out, chDB belongs to the processor, which is stopped for the read). */
  const QUERIES = {
    events: 'SELECT page, type, action, ts, campaign_code, gift_note, `order` FROM {db}.events',
    products: 'SELECT product_id, name, price, in_stock FROM {db}.products FINAL ORDER BY product_id',
    orders:
      "SELECT order_id, subtotal, total FROM {db}.orders FINAL WHERE order_id IN ('o1', 'o2', 'o3', 'oj1', 'ojl2') ORDER BY order_id",
    items:
      "SELECT order_id, product_id, quantity FROM {db}.line_items WHERE order_id IN ('o1', 'oj1') ORDER BY order_id, product_id",
    fill: "SELECT count() AS n FROM {db}.orders FINAL WHERE order_id LIKE 'ofill%'",
    original:
      "SELECT type, action, page, product_id, gift_note, identifiers['email'] AS email, identifiers['customer_id'] AS customer_id FROM {db}.events WHERE 'co1@x.com' IN (identifiers['email']) OR identifiers['customer_id'] = 'co1' ORDER BY type, action, page",
    originalOrders:
      "SELECT o.order_id AS order_id, o.subtotal AS subtotal, sum(i.quantity) AS quantity FROM {db}.orders AS o FINAL JOIN {db}.line_items AS i ON i.order_id = o.order_id WHERE o.order_id IN ('oo1', 'oo2') GROUP BY o.order_id, o.subtotal ORDER BY o.order_id",
  };
  const store: Record<keyof typeof QUERIES, Row[]> = {
    events: [],
    products: [],
    orders: [],
    items: [],
    fill: [],
    original: [],
    originalOrders: [],
  };
  /** Runs every one of QUERIES once into `store`, once the backlog is done (waited for by the caller). */
  async function readQueries(): Promise<void> {
    await readStore(
      p,
      acc.id,
      async (query) => {
        for (const [name, sql] of Object.entries(QUERIES))
          store[name as keyof typeof QUERIES] = await query<Row>(sql);
      },
      { once: true },
    );
  }

  beforeAll(async () => {
    const env: Record<string, string> = {
      CDP_LOADER_POLL_MS: '50',
      CDP_LOADER_LEASE_SECONDS: '1',
      CDP_LOADER_RECORDS_PER_MESSAGE: '100',
    };
    // Scaled out, all three buckets are in object storage: an S3-protocol server of the test's own.
    if (wiring === 'scaled out') {
      s3 = await S3Server.start();
      Object.assign(env, s3.env());
    }
    p = await start(env);
    acc = await p.createAccount('bulk');
    for (const [object, name, type] of [
      ['customers', 'tier', 'number'],
      ['events', 'campaign_code', 'string'],
      ['events', 'gift_note', 'string'],
      ['products', 'in_stock', 'boolean'],
    ]) {
      const res = await postWithKey(p, acc.privateKey, `/v3/schema/objects/${object}/fields`, {
        name,
        type,
        display_name: name,
      });
      expect(res.status).toBe(201);
    }
    const member = await postWithKey(p, acc.privateKey, '/v3/schema/identifiers', {
      name: 'member_id',
      display_name: 'Member ID',
      merge_confidence: 'high',
    });
    expect(member.status).toBe(201);
    if (p instanceof EmbeddedPlatform) {
      const app = p.app;
      buckets = app.get(Buckets);
      // A file that fails once mid-way (after three of its fifteen messages) is resumed by a loader.
      configureFaults(parseFaults(`loader.publish[${RESTART_FILE}]:throw@4`));
      await put(RESTART_FILE, RESTART);
      // A second loader beside the one of the all-in-one process.
      second = new BulkLoader(
        buckets,
        app.get(EventBus),
        app.get(MetadataStore),
        {
          byTrackerId: (t) => app.get(AccountsService).byTrackerId(t),
          customFields: async (a, o) => (await app.get(SchemaRegistry).read(a, true)).customFields(o),
          identifiers: async (a) => (await app.get(SchemaRegistry).read(a, true)).identifierNames,
        },
        {
          pollMs: 50,
          leaseMs: 1000,
          recordsPerMessage: 100,
          bucketNames: { incoming: 'incoming', scratch: 'scratch' },
          stagingDir: tmpdir(),
        },
        createLogger('warn'),
      );
      second.start();
    } else {
      const scaled = p;
      buckets = s3!.buckets();
      // A loader killed mid-file (SIGKILL after three messages); the next loaders take over after its lease.
      const doomed = await scaled.startLoader({ CDP_TEST_FAULTS: `loader.publish[${RESTART_FILE}]:kill@4` });
      await put(RESTART_FILE, RESTART);
      expect((await doomed.exited()).signal).toBe('SIGKILL');
      await Promise.all([scaled.startLoader(), scaled.startLoader()]);
    }
    await buckets.write(
      'scratch',
      `${acc.publicKey}/svc_events_scratch.csv`,
      lines('type,email,page', 'pageview,s@x.com,/scratch'),
    );
    await buckets.write(
      'incoming',
      `${acc.publicKey}/deeper/svc_events_deep.csv`,
      lines('type,email,page', 'pageview,d@x.com,/deep'),
    );
    for (const [name, body] of Object.entries(FILES)) await put(name, body);
    // A file uploaded by a client through the URL the API issues (presigned by S3, or served by the API).
    const issued = await issueUpload(UPLOADED);
    expect(issued.status).toBe(200);
    upload = issued.body as { url: string; path: string; method: string };
    if (p instanceof EmbeddedPlatform) {
      // The API's own URL names one file: another name under its signature is refused. (On S3 that is
      // the object store's check; s3rver does not make it.)
      const tampered = await fetch(upload.url.replace(UPLOADED, 'svc_events_other.csv'), {
        method: 'PUT',
        body: 'type,email,page\n',
      });
      expect(tampered.status).toBe(403);
    }
    const sent = await fetch(upload.url, {
      method: 'PUT',
      body: lines('type,email,page', 'pageview,u@x.com,/uploaded'),
      headers: { 'content-type': 'text/csv' },
    });
    expect(sent.status).toBe(200);
    await settled([...Object.keys(FILES), RESTART_FILE, UPLOADED]);
    // The same file dropped again under its name, then a last file: the duplicate is looked at first.
    await put('svc_events_1.csv', FILES['svc_events_1.csv']!);
    await put('svc_events_z_last.csv', lines('type,email,page', 'pageview,z@x.com,/last'));
    activity = await settled([...Object.keys(FILES), RESTART_FILE, UPLOADED, 'svc_events_z_last.csv']);
    // A completed file is on the bus; its records are visible once the processor has settled them all.
    await eventually(
      async () => {
        if (p instanceof EmbeddedPlatform) {
          const backlog = await p.app.get(EventBus).backlog();
          return backlog?.pending === 0 && backlog.inFlight === 0;
        }
        // JetStream's ingest stream keeps a message until it is acknowledged (work-queue retention).
        return /^0 message/.test((await p.http().get('/health')).body.drivers.bus.detail ?? '');
      },
      45_000,
      100,
    );
    await readQueries();
    events.push(...store.events);
  }, 120_000);

  afterAll(async () => {
    configureFaults([]);
    await second?.stop();
    await p?.close();
    await s3?.close();
  });

  const pages = (page: string) => events.filter((e) => e.page === page);

  it('loads customers with custom fields, dropping and reporting unknown columns', async () => {
    expect(activity.get('svc_customers_1.csv')).toMatchObject({
      state: 'completed',
      data_type: 'customers',
      format: 'csv',
      records: { read: 2, loaded: 2, invalid: 0, dropped: 2 },
      dropped_fields: ['shoe_size'],
      errors: [],
    });
    const ann = await eventually(async () => {
      const res = await api('/v3/profiles?customer_id=c1');
      return res.status === 200 && res.body;
    });
    expect(ann.attributes).toMatchObject({
      customer_id: 'c1',
      email: 'ann@x.com',
      first_name: 'Ann',
      tier: 3,
    });
    const cj = await eventually(async () => {
      const res = await api('/v3/profiles?customer_id=cj1');
      return res.status === 200 && res.body;
    });
    expect(cj.attributes).toMatchObject({ email: 'cj@x.com', tier: 7 });
  });

  it('resolves and merges customers by a custom identifier column, as the API does', async () => {
    expect(activity.get('svc_customers_members.csv')).toMatchObject({
      state: 'completed',
      records: { read: 2, loaded: 2, invalid: 0 },
      dropped_fields: [],
      errors: [],
    });
    const merged = await eventually(async () => {
      const res = await api('/v3/profiles?member_id=M-1');
      return res.status === 200 && res.body.attributes.customer_id === 'c1' && res.body;
    });
    expect(merged.attributes).toMatchObject({
      customer_id: 'c1',
      email: 'ann@x.com',
      first_name: 'Ann',
      last_name: 'Lee',
      member_id: 'M-1',
    });
  });

  it('loads a gzip products CSV with RFC 4180 quoting, and products JSON lines, custom fields included', () => {
    expect(activity.get('svc_products_1.csv.gz')).toMatchObject({
      state: 'completed',
      records: { read: 2, loaded: 2 },
      dropped_fields: ['colour'],
    });
    expect(activity.get('feed_products.svc')).toMatchObject({
      state: 'completed',
      dropped_fields: ['colour'],
    });
    expect(store.products.map((r) => [r.product_id, r.name, Number(r.price), r.in_stock])).toEqual([
      ['p1', 'Shoe', 19.99, true],
      ['p2', 'Hat, "big"', 5, false],
      ['pj1', 'Json product', 3, true],
      ['po1', 'Original product', 7.5, null],
    ]);
  });

  it('loads events as the events API would: custom fields, a date alone at midnight UTC, epoch seconds', () => {
    const [home] = pages('/home');
    expect(home).toMatchObject({ type: 'pageview', campaign_code: 'SPRING' });
    expect(new Date(String(home!.ts) + (String(home!.ts).endsWith('Z') ? '' : 'Z')).toISOString()).toBe(
      '2024-01-05T00:00:00.000Z',
    );
    expect(pages('/video')).toEqual([expect.objectContaining({ type: 'video', action: 'play' })]);
    expect(pages('/jsonl')).toHaveLength(1);
  });

  it('groups order lines into orders, sums item subtotals, and leaves out an order whose custom values differ', () => {
    const entry = activity.get('svc_orders_1.csv')!;
    expect(entry).toMatchObject({
      state: 'completed',
      records: { read: 206, loaded: 204, invalid: 2 },
      dropped_fields: ['item_color'],
    });
    expect(entry.errors).toEqual([expect.objectContaining({ line: 4, field: 'gift_note' })]);
    expect(store.orders.map((o) => [o.order_id, Number(o.subtotal)])).toEqual([
      ['o1', 30],
      ['o3', 45],
      ['oj1', 20.5],
      ['ojl2', 15],
    ]);
    // An orders JSON-lines file: orders only, items with sku and quantities in text.
    expect(activity.get('spring_orders.svc')).toMatchObject({
      state: 'completed',
      data_type: 'orders',
      format: 'jsonl',
      records: { read: 1, loaded: 1, invalid: 0 },
    });
    expect(store.items.map((i) => [i.order_id, i.product_id, Number(i.quantity)])).toEqual([
      ['o1', 'p1', 1],
      ['o1', 'p2', 2],
      ['oj1', 'p1', 2],
    ]);
    expect(store.fill.map((r) => Number(r.n))).toEqual([200]);
    expect(events.filter((e) => e.type === 'order' && e.gift_note === 'hello')).toHaveLength(1);
  });

  it("loads JSON lines in the original's own form, identifiers inside data, every data type", async () => {
    for (const [name, dataType, read] of [
      ['original_customers.svc', 'customers', 1],
      ['original_products.svc', 'products', 1],
      ['original_orders.svc', 'orders', 1],
      ['original_events.svc', 'events', 4],
    ] as const)
      expect(activity.get(name)).toMatchObject({
        state: 'completed',
        data_type: dataType,
        format: 'jsonl',
        records: { read, loaded: read, invalid: 0 },
        errors: [],
      });
    const olga = await eventually(async () => {
      const res = await api('/v3/profiles?email=co1@x.com');
      return res.status === 200 && res.body;
    });
    expect(olga.attributes).toMatchObject({ customer_id: 'co1', name: 'Olga Orig', tier: 4 });
    expect(store.original).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: 'pageview',
          page: '/original',
          gift_note: 'hey',
          email: 'co1@x.com',
        }),
        expect.objectContaining({ type: 'video', action: 'play', page: '/original-video' }),
        expect.objectContaining({ type: 'product', action: 'detail', product_id: 'po1' }),
        expect.objectContaining({ type: 'order', action: 'purchase', email: 'co1@x.com' }),
        expect.objectContaining({ type: 'order', action: 'purchase', customer_id: 'co1' }),
      ]),
    );
    expect(store.originalOrders.map((o) => [o.order_id, Number(o.subtotal), Number(o.quantity)])).toEqual([
      ['oo1', 12, 2],
      ['oo2', 7.5, 1],
    ]);
  });

  it('loads a file with 1.0% invalid records and rejects one with 1.1%, storing nothing of it', () => {
    const ok = activity.get('svc_events_edge_ok.csv')!;
    expect(ok).toMatchObject({ state: 'completed', records: { read: 1000, loaded: 990, invalid: 10 } });
    expect(ok.errors).toHaveLength(10);
    expect(ok.errors.map((e) => e.reason)).toEqual(
      expect.arrayContaining([
        'has 4 fields; the header has 3',
        expect.stringContaining('carriage return or newline'),
      ]),
    );
    expect(pages('/edge-ok')).toHaveLength(990);
    const bad = activity.get('svc_events_edge_bad.csv')!;
    expect(bad).toMatchObject({
      state: 'rejected',
      rejection_reason: '1.1% invalid, above 1%',
      records: { read: 1000, loaded: 0, invalid: 11 },
    });
    expect(bad.rejected_records_file).toMatch(
      new RegExp(`/${acc.publicKey}/activity/${bad.id}/rejected-records.jsonl$`),
    );
    expect(pages('/edge-bad')).toHaveLength(0);
  });

  it('writes the rejected records with their reasons to the scratch bucket', async () => {
    const bad = activity.get('svc_events_edge_bad.csv')!;
    const key = bad.rejected_records_file!.split('/').slice(1).join('/');
    let text = '';
    for await (const chunk of buckets.read('scratch', key)) text += String(chunk);
    const rejected = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { line: number; errors: unknown[]; record: string });
    expect(rejected).toHaveLength(11);
    expect(rejected[0]).toMatchObject({ line: 991, record: expect.stringContaining('one too many') });
  });

  it('finishes a file a loader stopped in the middle of, with every record once', () => {
    expect(activity.get(RESTART_FILE)).toMatchObject({
      state: 'completed',
      records: { read: 1500, loaded: 1500 },
    });
    expect(pages('/restart')).toHaveLength(1500);
  });

  it('ingests the same file dropped again under its name once', () => {
    expect([...activity.values()].filter((r) => r.name === 'svc_events_1.csv')).toHaveLength(1);
    expect(pages('/home')).toHaveLength(1);
    expect(pages('/last')).toHaveLength(1);
  });

  it('never reads the scratch bucket, nor anything below the account prefix', () => {
    expect(activity.has('svc_events_scratch.csv')).toBe(false);
    expect(pages('/scratch')).toHaveLength(0);
    expect(pages('/deep')).toHaveLength(0);
  });

  it('issues upload URLs into the own prefix of the account only', async () => {
    expect(upload).toMatchObject({
      method: 'PUT',
      path: expect.stringMatching(new RegExp(`/${acc.publicKey}/${UPLOADED}$`)),
    });
    expect(activity.get(UPLOADED)).toMatchObject({ state: 'completed', records: { loaded: 1 } });
    expect(pages('/uploaded')).toHaveLength(1);
    for (const name of [
      '../other/svc_events_x.csv',
      'sub/svc_events_x.csv',
      '..',
      'svc_events_x.txt',
      '',
      42,
    ]) {
      const res = await issueUpload(name);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ detail: { invalids: [expect.objectContaining({ field: 'name' })] } });
    }
    expect((await issueUpload('svc_events_x.csv', acc.publicKey)).status).toBe(403);
  });

  // Embedded only: scaled out, uploads go to the S3 server (s3rver), whose URL checks are its own, not the API's.
  if (wiring === 'embedded') {
    it("checks the query of the API's own upload URL as every control-plane query is, in the envelope", async () => {
      const url = new URL(upload.url);
      const put = async (change: (query: URLSearchParams) => void) => {
        const tried = new URL(url);
        change(tried.searchParams);
        const res = await fetch(tried, { method: 'PUT', body: 'type,email,page\n' });
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(res.headers.get('z-request-id')).toBeTruthy();
        return { status: res.status, body: (await res.json()) as Row };
      };
      const invalids = async (change: (query: URLSearchParams) => void) => {
        const res = await put(change);
        expect(res.status).toBe(400);
        return (res.body.detail as { invalids: unknown[] }).invalids;
      };
      expect(await invalids((q) => q.delete('signature'))).toEqual([
        { field: 'signature', reason: 'is required' },
      ]);
      expect(await invalids((q) => q.set('expires', 'soon'))).toEqual([
        { field: 'expires', reason: 'must be a whole number of seconds since 1970' },
      ]);
      expect(
        await invalids((q) => {
          q.delete('expires');
          q.set('signature', 'not-hex');
        }),
      ).toEqual([
        { field: 'expires', reason: 'is required' },
        { field: 'signature', reason: 'must be 64 lowercase hexadecimal digits' },
      ]);
      // Well formed, but expired or not the API's own: 403, as before.
      const expired = await put((q) => q.set('expires', '1'));
      expect(expired.status).toBe(403);
      expect(expired.body).toMatchObject({ detail: { message: expect.stringContaining('expired') } });
      expect((await put((q) => q.set('signature', '0'.repeat(64)))).status).toBe(403);
    });
  }

  it('rejects a file whose name is no bulk file name', () => {
    expect(activity.get('notes.txt')).toMatchObject({
      state: 'rejected',
      rejection_reason: expect.stringContaining('must start with svc_products'),
    });
  });

  it('shows one entry with its progress, and pages the log newest first', async () => {
    const one = activity.get('svc_events_1.csv')!;
    const res = await api(`/v3/activity/${one.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: one.id, progress: { records: 2, size: one.size } });
    expect((await api('/v3/activity/0123456789abcdef0123456789abcdef')).status).toBe(404);
    expect((await p.http().get('/v3/activity').set('x-api-key', acc.publicKey)).status).toBe(403);
    const first = await api('/v3/activity?limit=5');
    expect(first.body.activity).toHaveLength(5);
    const rest = await api(`/v3/activity?limit=100&cursor=${first.body.next}`);
    const all = [...first.body.activity, ...rest.body.activity] as ActivityRecord[];
    expect(all.map((r) => r.id).sort()).toEqual([...activity.values()].map((r) => r.id).sort());
    const created = all.map((r) => r.created_at);
    expect(created).toEqual([...created].sort().reverse());
    expect(wiring).toBeTruthy();
  });

  it('writes exports to the export bucket: object storage when scaled out, not a replica disk', async () => {
    const { record } = await completedExport(p, acc.privateKey, { objects: ['products'] }, 60_000);
    const id = record.id;
    const bucket = wiring === 'scaled out' ? 'cdp-export' : 'export';
    expect(record.path).toBe(`${bucket}/${acc.publicKey}/data-exports/${id}`);
    const prefix = `${acc.publicKey}/data-exports/${id}`;
    const keys = await buckets.list('export', prefix);
    expect(keys).toContain(`${prefix}/complete.json`);
    expect(keys.length).toBeGreaterThan(1);
  });

  it('pages the log to its end: a page of one at a time, the limit bounds, a cursor it never gave', async () => {
    const walked: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await api(`/v3/activity?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.activity).toHaveLength(1);
      walked.push((res.body.activity as ActivityRecord[])[0]!.id);
      cursor = res.body.next as string | undefined;
    } while (cursor);
    const whole = await api('/v3/activity?limit=100');
    expect(walked).toEqual((whole.body.activity as ActivityRecord[]).map((r) => r.id));
    expect(whole.body.next).toBeUndefined();
    for (const limit of ['0', '101', '-1', '2.5', 'x']) {
      const res = await api(`/v3/activity?limit=${limit}`);
      expect(res.status).toBe(400);
    }
    expect((await api('/v3/activity?cursor=bm90LWEtY3Vyc29y')).status).toBe(400);
    // Without a limit, the first 20.
    expect((await api('/v3/activity')).body.activity).toHaveLength(Math.min(20, walked.length));
  });
});
