import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { parse } from 'csv-parse/sync';
import { readParquet } from 'parquet-wasm';
import { ExportWorkerLifecycle } from '@cdp/exports/worker';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { ScaledPlatform } from './support/scaled.js';
import { exportDirOnDisk, type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { completedExport, finishedExport, type Manifest, type ManifestFile } from './support/exports.js';
import { postWithKey } from './support/api-calls.js';
import { declareField, storesObject } from './support/schema-objects.js';

/** Small files, so that a few dozen rows already span several (spec: sorts apply per file). */
const ROWS_PER_FILE = 4;
const ENV = { CDP_EXPORT_ROWS_PER_FILE: String(ROWS_PER_FILE), CDP_EXPORT_POLL_MS: '50' };

interface SourceEvent {
  email: string;
  type: string;
  action: string;
  ts: number;
  title: string | null;
  days: number | null;
  landing: boolean | null;
  product: string | null;
}

const PEOPLE = ['ann@example.com', 'bob@example.com', 'cy@example.com'];
const TITLES = ['He said "hi", then left', 'tab\there|pipe', 'plain', null];
/** The rows sent; what every file is checked against. */
const SOURCE: SourceEvent[] = Array.from({ length: 18 }, (_, i) => ({
  email: PEOPLE[i % 3]!,
  type: i % 4 === 0 ? 'pageview' : 'product',
  action: i % 4 === 0 ? '' : i % 2 ? 'detail' : 'add_to_cart',
  ts: 1_700_000_000 + i * 60,
  title: TITLES[i % 4]!,
  days: i % 5 === 0 ? null : i,
  landing: i % 3 === 0 ? null : i % 2 === 0,
  product: i % 4 === 0 ? null : `p${i % 3}`,
}));
/** The product feed: p1 and p2 are variants of p0 (spec "Product fields": parent_product_id). */
const PRODUCTS = [
  { product_id: 'p0', name: 'Lamp', category: 'Home > Lighting', price: 30 },
  { product_id: 'p1', name: 'Lamp, red', parent_product_id: 'p0', price: 31.5 },
  { product_id: 'p2', name: 'Lamp, blue', parent_product_id: 'p0', price: 32 },
];

describe.each(WIRINGS)('exports (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;

  beforeAll(async () => {
    ({ p, acc } = await startWithAccount(start, undefined, ENV));
    await postWithKey(
      p,
      acc.publicKey,
      '/v3/profiles',
      PEOPLE.map((email, i) => ({ attributes: { email, first_name: `P${i}`, opted_in: i !== 1 } })),
    ).expect(202);
    const events = SOURCE.map((e) => ({
      type: e.type,
      ...(e.action ? { action: e.action } : {}),
      identifiers: { email: e.email },
      data: {
        ts: e.ts,
        ...(e.title !== null ? { title: e.title } : {}),
        ...(e.days !== null ? { days_since_last_visit: e.days } : {}),
        ...(e.landing !== null ? { landing: e.landing } : {}),
        ...(e.product !== null ? { product_id: e.product } : {}),
      },
    }));
    await postWithKey(p, acc.publicKey, '/v3/objects/products', PRODUCTS).expect(202);
    await postWithKey(p, acc.publicKey, '/v3/events', events).expect(202);
    // Everything sent is in the store: acknowledged by the processor (scaled) or counted (embedded).
    await eventually(async () =>
      p instanceof EmbeddedPlatform
        ? (await p.scalar(acc.id, 'SELECT count() AS n FROM {db}.events')) === SOURCE.length &&
          (await p.scalar(acc.id, 'SELECT count() AS n FROM {db}.products FINAL')) === PRODUCTS.length
        : (await p.pending()) === 0,
    );
  }, 90_000);
  afterAll(() => p.close(), 30_000);

  const post = (body: unknown, key = acc.privateKey) => postWithKey(p, key, '/v3/exports', body);
  const onDisk = (path: string): string => exportDirOnDisk(p, path);

  /** Waits for the export to finish and returns its manifest, checking each file's size and hash. */
  async function finished(id: string, key = acc.privateKey): Promise<{ manifest: Manifest; dir: string }> {
    const exported = await finishedExport(p, key, id);
    const { record, dir } = exported;
    expect(['completed', 'completed_with_errors']).toContain(record.state);
    expect(record.path).toMatch(new RegExp(`^export/[^/]+/data-exports/${id}$`));
    const manifest = exported.manifest();
    expect(manifest.export_id).toBe(id);
    expect(manifest.state).toBe(record.state);
    for (const f of manifest.files) {
      const bytes = readFileSync(exported.fileOf(f));
      expect(bytes.length).toBe(f.bytes);
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(f.sha256);
    }
    // Nothing else in the directory: the files of the manifest and the manifest.
    expect(readdirSync(dir).sort()).toEqual(
      [...manifest.files.map((f) => f.path.split('/').pop()!), 'complete.json'].sort(),
    );
    return { manifest, dir };
  }

  function csvRows(dir: string, f: ManifestFile, delimiter = ','): Record<string, string>[] {
    const rows = parse<Record<string, string>>(readFileSync(join(dir, f.path.split('/').pop()!)), {
      columns: true,
      delimiter,
      relax_quotes: false,
    });
    expect(rows).toHaveLength(f.rows);
    return rows;
  }

  function parquetRows(dir: string, f: ManifestFile): { rows: Record<string, unknown>[]; types: string[] } {
    const table = tableFromIPC(
      readParquet(readFileSync(join(dir, f.path.split('/').pop()!))).intoIPCStream(),
    );
    expect(table.numRows).toBe(f.rows);
    const rows = table.toArray().map((r) => (r as { toJSON(): Record<string, unknown> }).toJSON());
    return { rows, types: table.schema.fields.map((x) => `${x.name}:${String(x.type)}`) };
  }

  it('exports whole objects to CSV: 202 with the record, files split by rows, every value as sent', async () => {
    const res = await post({ objects: ['events', 'customers'] });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      id: expect.any(String),
      path: expect.stringMatching(new RegExp(`/${acc.publicKey}/data-exports/${res.body.id}$`)),
      state: 'pending',
      requested_at: expect.any(String),
      definition_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      detail: { format: 'CSV', delimiter: 'comma', objects: ['events', 'customers'] },
    });
    const { manifest, dir } = await finished(res.body.id);
    expect(manifest.state).toBe('completed');
    const eventFiles = manifest.files.filter((f) => f.object === 'events');
    expect(eventFiles.length).toBe(Math.ceil(SOURCE.length / ROWS_PER_FILE));
    expect(eventFiles.every((f) => f.rows <= ROWS_PER_FILE && f.path.endsWith('.csv'))).toBe(true);
    const events = eventFiles.flatMap((f) => csvRows(dir, f));
    expect(events).toHaveLength(SOURCE.length);
    const bySecond = new Map(events.map((r) => [Date.parse(r.ts!) / 1000, r]));
    for (const e of SOURCE) {
      const row = bySecond.get(e.ts)!;
      expect(row).toMatchObject({
        type: e.type,
        action: e.action,
        channel: 'offline',
        ts: new Date(e.ts * 1000).toISOString(),
        title: e.title ?? '',
        days_since_last_visit: e.days === null ? '' : String(e.days),
        landing: e.landing === null ? '' : String(e.landing),
      });
      expect(JSON.parse(row.identifiers!)).toEqual({ email: e.email });
    }
    expect(Object.keys(events[0]!)).toEqual(Object.keys(manifest.columns.events!));
    expect(manifest.columns.events).toMatchObject({ ts: 'timestamp', days_since_last_visit: 'integer' });

    const customers = manifest.files.filter((f) => f.object === 'customers').flatMap((f) => csvRows(dir, f));
    expect(customers.map((c) => c.email).sort()).toEqual(PEOPLE);
    expect(customers.find((c) => c.email === 'bob@example.com')).toMatchObject({
      first_name: 'P1',
      opted_in: 'false',
    });
  });

  it('writes a filtered select to Parquet: relation paths, typed columns, nulls, filter and per-file sorts', async () => {
    const select = {
      object: 'events',
      fields: [
        'ts',
        'type',
        'days_since_last_visit',
        'landing',
        'title',
        'customer.email',
        'customer.opted_in',
      ],
      filter: {
        or: [
          {
            and: [
              { field: 'customer.email', operator: 'ilike', value: 'ANN@%' },
              { field: 'days_since_last_visit', operator: 'is not', value: null },
            ],
          },
          {
            and: [
              { field: 'landing', operator: 'is', value: null },
              { field: 'type', operator: '!=', value: 'x' },
            ],
          },
        ],
      },
      sorts: [{ field: 'days_since_last_visit', order: 'desc' }],
    };
    const res = await post({ format: 'Parquet', select });
    expect(res.status).toBe(202);
    expect(res.body.detail).toEqual({ format: 'Parquet', delimiter: 'comma', objects: ['events'], select });
    const { manifest, dir } = await finished(res.body.id);
    expect(manifest.columns.events).toEqual({
      ts: 'timestamp',
      type: 'string',
      days_since_last_visit: 'integer',
      landing: 'boolean',
      title: 'string',
      'customer.email': 'string',
      'customer.opted_in': 'boolean',
    });
    const expected = SOURCE.filter(
      (e) => (e.email.startsWith('ann@') && e.days !== null) || e.landing === null,
    );
    const got: Record<string, unknown>[] = [];
    for (const f of manifest.files) {
      expect(f.path.endsWith('.parquet')).toBe(true);
      const { rows, types } = parquetRows(dir, f);
      expect(types).toEqual([
        expect.stringMatching(/^ts:Timestamp<(MILLI|MICRO)SECOND, UTC>$/),
        'type:Utf8',
        'days_since_last_visit:Int64',
        'landing:Bool',
        'title:Utf8',
        'customer.email:Utf8',
        'customer.opted_in:Bool',
      ]);
      // Sorted within each file: days descending, nulls last.
      const days = rows.map((r) =>
        r.days_since_last_visit === null ? null : Number(r.days_since_last_visit),
      );
      const present = days.filter((d): d is number => d !== null);
      expect(present).toEqual([...present].sort((a, b) => b - a));
      expect(days.slice(present.length).every((d) => d === null)).toBe(true);
      got.push(...rows);
    }
    expect(got).toHaveLength(expected.length);
    for (const e of expected) {
      const row = got.find((r) => {
        const ts = Number(r.ts);
        return (ts > 1e14 ? ts / 1e6 : ts / 1e3) === e.ts;
      })!;
      expect(row).toMatchObject({
        type: e.type,
        days_since_last_visit: e.days === null ? null : BigInt(e.days),
        landing: e.landing,
        title: e.title,
        'customer.email': e.email,
        'customer.opted_in': e.email !== 'bob@example.com',
      });
    }
  });

  it.each([
    ['tab', '\t'],
    ['pipe', '|'],
  ])('writes CSV with the %s delimiter, quoting per RFC 4180', async (delimiter, char) => {
    const res = await post({
      delimiter,
      select: {
        object: 'events',
        fields: ['title', 'customer.email'],
        filter: { field: 'title', operator: 'is not', value: null },
        sorts: [{ field: 'title' }],
      },
    });
    expect(res.status).toBe(202);
    const { manifest, dir } = await finished(res.body.id);
    const text = readFileSync(join(dir, manifest.files[0]!.path.split('/').pop()!), 'utf8');
    expect(text.split('\n')[0]).toBe(`title${char}customer.email`);
    const rows = manifest.files.flatMap((f) => csvRows(dir, f, char));
    expect(rows.map((r) => r.title).sort()).toEqual(
      SOURCE.filter((e) => e.title !== null)
        .map((e) => e.title)
        .sort(),
    );
    for (const f of manifest.files) {
      const titles = csvRows(dir, f, char).map((r) => r.title!);
      expect(titles).toEqual([...titles].sort());
    }
  });

  it('keeps a job across a restart of the worker; 422 while an object is being exported; lists those in flight', async () => {
    // The exporter role stops: in the processor (scaled) or in the one process (embedded).
    let resumeEmbedded: (() => Promise<void>) | undefined;
    if (p instanceof ScaledPlatform) {
      await p.stopProcessor();
    } else {
      const embedded = p;
      await embedded.app.get(ExportWorkerLifecycle).beforeApplicationShutdown();
      resumeEmbedded = async () => {
        await embedded.close();
        p = await EmbeddedPlatform.start(ENV, embedded.config.dataDir);
      };
    }
    const first = await post({ objects: ['customers'] });
    expect(first.status).toBe(202);
    const busy = await post({ objects: ['events', 'customers'] });
    expect(busy.status).toBe(422);
    expect(busy.body).toMatchObject({
      title: 'Unprocessable Entity',
      status: 422,
      detail: { message: expect.stringContaining('customers') },
    });
    expect(busy.body.detail.message).not.toContain('events');
    const selectBusy = await post({ select: { object: 'customers', fields: ['email'] } });
    expect(selectBusy.status).toBe(422);
    // events was not left locked by the refused request.
    const other = await post({ objects: ['events'] });
    expect(other.status).toBe(202);

    const list = await p.http().get('/v3/exports').set('x-api-key', acc.privateKey);
    expect(list.status).toBe(200);
    expect(list.body.map((r: { id: string }) => r.id).sort()).toEqual([first.body.id, other.body.id].sort());
    expect(list.body.every((r: { state: string }) => r.state === 'pending')).toBe(true);

    if (p instanceof ScaledPlatform) await p.startProcessor();
    else await resumeEmbedded!();
    for (const id of [first.body.id, other.body.id]) {
      const { manifest } = await finished(id);
      expect(manifest.state).toBe('completed');
    }
    const after = await p.http().get('/v3/exports').set('x-api-key', acc.privateKey);
    expect(after.body).toEqual([]);
    // Finished: the object can be exported again.
    const again = await post({ objects: ['customers'] });
    expect(again.status).toBe(202);
    await finished(again.body.id);
  });

  it('follows relation paths through the product feed: product.name, product.parent_product.name', async () => {
    const res = await post({
      select: {
        object: 'events',
        fields: ['ts', 'product_id', 'product.name', 'product.parent_product.name', 'customer.email'],
        filter: { field: 'product_id', operator: 'is not', value: null },
        sorts: [{ field: 'ts' }],
      },
    });
    expect(res.status).toBe(202);
    const { manifest, dir } = await finished(res.body.id);
    const rows = manifest.files.flatMap((f) => csvRows(dir, f));
    const withProduct = SOURCE.filter((e) => e.product !== null);
    expect(rows).toHaveLength(withProduct.length);
    const byProduct = new Map(PRODUCTS.map((x) => [x.product_id, x]));
    for (const row of rows) {
      const sent = withProduct.find((e) => new Date(e.ts * 1000).toISOString() === row.ts)!;
      const product = byProduct.get(sent.product!)!;
      expect(row).toEqual({
        ts: row.ts,
        product_id: sent.product,
        'product.name': product.name,
        'product.parent_product.name': product.parent_product_id ? 'Lamp' : '',
        'customer.email': sent.email,
      });
    }
  });

  it("exports an account's own objects and follows its own relations (schema API)", async () => {
    const own = await p.createAccount();
    const send = (path: string, body: unknown, key = own.privateKey) => postWithKey(p, key, path, body);
    const created = await send(
      '/v3/schema/objects',
      storesObject('string', { name: 'size', type: 'number', display_name: 'Size' }),
    );
    expect(created.status).toBe(201);
    await declareField(p, own.privateKey, 'events', {
      name: 'store_id',
      type: 'string',
      display_name: 'Store',
    });
    expect(
      (
        await send('/v3/schema/objects/events/relations', {
          name: 'store',
          display_name: 'Store',
          child_object: 'stores',
          join_fields: [{ parent: 'store_id', child: 'store_id' }],
        })
      ).status,
    ).toBe(201);
    // The API may cache the schema a moment (2 s): wait until a field value is kept, not dropped.
    await eventually(async () => {
      const r = await send(
        '/v3/events',
        { type: 'visit', identifiers: { vuid: 'v-probe' }, data: { store_id: 's0' } },
        own.publicKey,
      );
      return r.status === 202 && r.body.dropped === undefined;
    });
    await send(
      '/v3/objects/stores',
      [
        { store_id: 's1', city: 'Oslo', size: 120.5 },
        { store_id: 's2', city: 'Rome', size: 80 },
      ],
      own.publicKey,
    ).expect(202);
    await send(
      '/v3/events',
      [
        { type: 'visit', identifiers: { vuid: 'v1' }, data: { store_id: 's1' } },
        { type: 'visit', identifiers: { vuid: 'v2' }, data: { store_id: 's2' } },
      ],
      own.publicKey,
    ).expect(202);

    const exportOf = async (body: unknown) => {
      const exported = await completedExport(p, own.privateKey, body as object);
      return exported.manifest().files.flatMap((f) => csvRows(exported.dir, f));
    };
    const rows = await eventually(async () => {
      const got = await exportOf({
        select: {
          object: 'events',
          fields: ['store_id', 'store.city', 'store.size'],
          filter: { field: 'store_id', operator: 'like', value: 's%' },
          sorts: [{ field: 'store_id' }],
        },
      });
      if (got.length < 3 || got.some((r) => r.store_id !== 's0' && r['store.city'] === ''))
        throw new Error('not yet');
      return got;
    }, 60_000);
    expect(rows).toEqual(
      [
        { store_id: 's0', 'store.city': '', 'store.size': '' },
        { store_id: 's1', 'store.city': 'Oslo', 'store.size': '120.5' },
        { store_id: 's2', 'store.city': 'Rome', 'store.size': '80' },
      ].slice(rows.length === 3 ? 0 : 0),
    );
    const stores = await exportOf({ objects: ['stores'] });
    expect(stores.map((r) => [r.store_id, r.city]).sort()).toEqual([
      ['s1', 'Oslo'],
      ['s2', 'Rome'],
    ]);
  });

  it('exports every object when none is named; an empty selection still gives a file with its header', async () => {
    const all = await post({});
    expect(all.status).toBe(202);
    expect(all.body.detail.objects.sort()).toEqual([
      'customers',
      'events',
      'line_items',
      'orders',
      'products',
    ]);
    await finished(all.body.id);
    const none = await post({
      select: {
        object: 'events',
        fields: ['type'],
        filter: { field: 'type', operator: '=', value: 'nothing' },
      },
    });
    const { manifest, dir } = await finished(none.body.id);
    expect(manifest.files).toHaveLength(1);
    expect(manifest.files[0]!.rows).toBe(0);
    expect(readFileSync(join(dir, manifest.files[0]!.path.split('/').pop()!), 'utf8').trim()).toBe('type');
  });

  it('404 for a missing object, field or relation; 400 for a bad filter, operator or format', async () => {
    const cases: [unknown, number, unknown][] = [
      [{ objects: ['nope'] }, 404, { message: 'unable to locate object nope' }],
      [{ select: { object: 'nope', fields: ['*'] } }, 404, { message: 'unable to locate object nope' }],
      [
        { select: { object: 'events', fields: ['nope'] } },
        404,
        { message: 'unable to locate field events.nope' },
      ],
      [
        { select: { object: 'events', fields: ['owner.email'] } },
        404,
        { message: 'unable to locate relation events.owner' },
      ],
      [
        { select: { object: 'events', fields: ['customer.nope'] } },
        404,
        { message: 'unable to locate field customers.nope' },
      ],
      [{ format: 'xml' }, 400, { invalids: [{ field: 'format', reason: expect.any(String) }] }],
      [{ delimiter: ';' }, 400, { invalids: [{ field: 'delimiter', reason: expect.any(String) }] }],
      [
        { select: { object: 'events', fields: ['*'], filter: { field: 'type', operator: '~', value: 'x' } } },
        400,
        { invalids: [{ field: 'select.filter.operator', reason: expect.any(String) }] },
      ],
      [
        { select: { object: 'events', fields: ['*'], filter: { and: [{ field: 'type' }] } } },
        400,
        { invalids: [{ field: 'select.filter.and[0].operator', reason: expect.any(String) }] },
      ],
      [
        {
          select: {
            object: 'events',
            fields: ['*'],
            filter: { field: 'days_since_last_visit', operator: '>', value: '1; DROP TABLE events' },
          },
        },
        400,
        { invalids: [{ field: 'select.filter', reason: expect.stringContaining('number') }] },
      ],
    ];
    for (const [body, status, detail] of cases) {
      const res = await post(body);
      expect({ body, status: res.status, detail: res.body.detail }).toEqual({ body, status, detail });
    }
  });

  it("exports a segment's members: the rows are who its size counts, narrowed by the filter", async () => {
    const shop = await p.createAccount('segment-exports');
    const send = (path: string, body: unknown, key = shop.publicKey) => postWithKey(p, key, path, body);
    const people = ['ada', 'bo', 'cy'].map((n, i) => ({ email: `${n}@shop.io`, first_name: `N${i}` }));
    await send(
      '/v3/profiles',
      people.map((attributes) => ({ attributes })),
    ).expect(202);
    // Ada and Bo added to cart this week, Cy a year ago (outside the window).
    const cart = (email: string, ts: number) => ({
      type: 'product',
      action: 'add_to_cart',
      identifiers: { email },
      data: { product_id: 'p1', ts: new Date(ts).toISOString() },
    });
    const now = Date.now();
    const carts = [
      cart('ada@shop.io', now),
      cart('bo@shop.io', now),
      cart('cy@shop.io', now - 300 * 86_400_000),
    ];
    await send('/v3/events', carts).expect(202);
    await send(
      '/v3/segments',
      {
        id: 'carts',
        name: 'Carts',
        definition: { events: [{ type: 'product', action: 'add_to_cart', within_days: 30 }] },
      },
      shop.privateKey,
    ).expect(201);
    const size = async () =>
      (await p.http().get('/v3/segments/carts/size').set('x-api-key', shop.privateKey)).body.customers;
    await eventually(async () => (await size()) === 2);

    const exportOf = async (select: unknown) => {
      const res = await send('/v3/exports', { select }, shop.privateKey);
      expect(res.status).toBe(202);
      expect(res.body.detail.select.segment).toBe('carts');
      const { manifest, dir } = await finished(res.body.id, shop.privateKey);
      return manifest.files
        .flatMap((f) => csvRows(dir, f))
        .map((r) => r.email)
        .sort();
    };
    const base = { object: 'customers', segment: 'carts', fields: ['email', 'first_name'] };
    expect(await exportOf(base)).toEqual(['ada@shop.io', 'bo@shop.io']);
    expect(await exportOf({ ...base, filter: { field: 'first_name', operator: '=', value: 'N1' } })).toEqual([
      'bo@shop.io',
    ]);

    const refused = async (select: unknown) => {
      const res = await send('/v3/exports', { select }, shop.privateKey);
      return { status: res.status, detail: res.body.detail };
    };
    expect(await refused({ ...base, segment: 'nope' })).toEqual({
      status: 404,
      detail: { message: 'unable to locate segment nope' },
    });
    expect(await refused({ ...base, object: 'events' })).toEqual({
      status: 400,
      detail: {
        invalids: [{ field: 'select.segment', reason: 'selects customers: object must be customers' }],
      },
    });
    expect((await refused({ ...base, segment: 'Bad Id' })).detail.invalids[0].field).toBe('select.segment');
  });

  it('needs the private key, and shows no other account its exports', async () => {
    expect((await post({}, acc.publicKey)).status).toBe(403);
    const mine = await post({ objects: ['events'] });
    expect(mine.status).toBe(202);
    const other = await p.createAccount('other');
    const res = await p.http().get(`/v3/exports/${mine.body.id}`).set('x-api-key', other.privateKey);
    expect(res.status).toBe(404);
    const list = await p.http().get('/v3/exports').set('x-api-key', other.privateKey);
    expect(list.body).toEqual([]);
    // The other account's export of the same object is not blocked by this one's.
    expect((await post({ objects: ['events'] }, other.privateKey)).status).toBe(202);
    await finished(mine.body.id);
    expect(existsSync(join(onDisk(mine.body.path), 'complete.json'))).toBe(true);
  });
});
