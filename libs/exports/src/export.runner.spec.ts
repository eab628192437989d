import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { LocalDirBuckets } from '@cdp/buckets/local';
import { ChdbTransport } from '@cdp/store/chdb';
import { createLogger } from '@cdp/logger';
import { ClickHouseStore, type StoreBatch } from '@cdp/store';
import { BuiltInExportCatalogs } from './export-objects.js';
import type { ExportJob } from './export-record.js';
import type { ExportDetail } from './export-request.js';
import { DuckDBInstance } from '@duckdb/node-api';
import { DUCKDB_SETUP, ExportRunner, pageQuery, plainDecimal, plainNumber } from './export.runner.js';
import { DECIMAL_TYPE } from './select.compiler.js';
import { BUILT_IN_CATALOG, CUSTOMERS_OBJECT, EVENTS_OBJECT, ExportCatalogs } from './export-objects.js';

/** The data path on the real engines: chDB pages → DuckDB → files in a local bucket. */
const readCsv = (path: string): Record<string, string>[] =>
  parse<Record<string, string>>(readFileSync(path), { columns: true });

describe('ExportRunner on chDB and DuckDB', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-export-runner-'));
  let store: ClickHouseStore;
  let buckets: LocalDirBuckets;
  let runner: ExportRunner;
  const account = 'acc_runner';

  beforeAll(async () => {
    store = new ClickHouseStore(new ChdbTransport(join(dir, 'chdb')));
    buckets = new LocalDirBuckets({
      incoming: join(dir, 'in'),
      scratch: join(dir, 'scratch'),
      export: join(dir, 'export'),
    });
    runner = runnerOf(new BuiltInExportCatalogs());
    const batch: StoreBatch = { identityLinks: [], merges: [], conflicts: [], customers: [], events: [] };
    for (let c = 0; c < 3; c++) {
      batch.customers.push({
        svc_id: `c${c}`,
        version: 1,
        msg_id: 'm1',
        updated_at: '2026-11-22 10:00:00.000',
        merged_into: null,
        attributes: { email: `c${c}@x.com`, opted_in: c % 2 === 0 },
      });
    }
    for (let i = 0; i < 20; i++) {
      batch.events.push({
        event_id: `e${String(i).padStart(2, '0')}`,
        msg_id: 'm1',
        svc_id: `c${i % 3}`,
        ts: `2026-11-22 10:00:${String(i).padStart(2, '0')}.000`,
        received_at: '2026-11-22 10:01:00.000',
        type: 'product',
        action: i % 2 ? 'detail' : 'add_to_cart',
        channel: 'offline',
        identifiers: { email: `c${i % 3}@x.com` },
        data: { product_id: `p${i}`, days_since_last_visit: i },
        order: null,
      });
    }
    await store.write(account, batch, false);
  });
  afterAll(() => store.close());

  const runnerOf = (catalogs: ExportCatalogs) =>
    new ExportRunner(
      store,
      buckets,
      catalogs,
      { tmpDir: join(dir, 'tmp'), rowsPerFile: 7, memoryLimitMb: 128, threads: 1 },
      createLogger('silent'),
    );

  const job = (id: string, detail: Partial<ExportDetail>): ExportJob => ({
    account,
    trackerId: 'trk',
    attempts: 1,
    record: {
      id,
      path: `export/trk/data-exports/${id}`,
      state: 'running',
      requested_at: new Date().toISOString(),
      definition_id: 'd',
      detail: { format: 'CSV', delimiter: 'comma', objects: [], ...detail },
    },
  });

  it('pages a table into files of at most rowsPerFile rows, every row once', async () => {
    const manifest = await runner.run(job('x1', { objects: ['events'] }), new AbortController().signal);
    expect(manifest.state).toBe('completed');
    expect(manifest.files.map((f) => f.rows)).toEqual([7, 7, 6]);
    // Named as the record names the location: the bucket first.
    expect(manifest.files.map((f) => f.path)).toEqual(
      [0, 1, 2].map((n) => `export/trk/data-exports/x1/events_0000${n}.csv`),
    );
    const ids = manifest.files.flatMap((f) => {
      const rows = readCsv(join(dir, f.path));
      return rows.map((r) => r.event_id);
    });
    expect(ids.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `e${String(i).padStart(2, '0')}`));
  });

  it('reads a later page from its place in the key, not from the start of the table', async () => {
    const big = 'acc_pages';
    await store.ensureAccount(big);
    // 100,000 events over 1,000 customers: about a dozen granules of the primary key.
    await store.query(
      big,
      `INSERT INTO {db}.events (event_id, msg_id, svc_id, ts, received_at, type, action, channel)
       SELECT concat('e', toString(number)), 'm', concat('c', leftPad(toString(number % 1000), 4, '0')),
              toDateTime64(1700000000 + number, 3, 'UTC'), now64(3, 'UTC'), 'pageview', '', 'web'
       FROM numbers(100000)`,
    );
    const granules = async (after: (string | number)[] | undefined): Promise<string> => {
      const { sql, params } = pageQuery(EVENTS_OBJECT, after, 1000);
      const plan = await store.query<{ explain: string }>(big, `EXPLAIN indexes = 1 ${sql}`, params);
      // The primary key's line: granules selected / granules in the table (after the partition key's).
      return /PrimaryKey[\s\S]*?(Granules: \d+\/\d+)/.exec(plan.map((l) => l.explain).join('\n'))![1]!;
    };
    const whole = await granules(undefined);
    const [, total] = /Granules: (\d+)\/(\d+)/.exec(whole)!.map(Number);
    expect(total).toBeGreaterThan(10);
    const late = await granules(['c0990', 1700099990000, 'e99990']);
    expect(late).toMatch(/Granules: [12]\//);
    // Paging through finds every row once.
    let after: (string | number)[] | undefined;
    let seen = 0;
    for (;;) {
      const { sql, params } = pageQuery(EVENTS_OBJECT, after, 30_000);
      const rows = await store.query<{ svc_id: string; ts: string; event_id: string; ms: number }>(
        big,
        `SELECT svc_id, event_id, toUnixTimestamp64Milli(ts) AS ms FROM (${sql})`,
        params,
      );
      seen += rows.length;
      if (rows.length < 30_000) break;
      const last = rows.at(-1)!;
      after = [last.svc_id, last.ms, last.event_id];
    }
    expect(seen).toBe(100_000);
  });

  it('completes with errors when an object fails: the record of it, none of its files, the rest exported', async () => {
    const broken = { ...EVENTS_OBJECT, name: 'broken', from: '{db}.no_such_table' };
    const catalogs: ExportCatalogs = { forAccount: () => Promise.resolve(BUILT_IN_CATALOG.with(broken)) };
    const withBroken = runnerOf(catalogs);
    // Left by an earlier attempt of the same job: a resumed job starts from an empty location.
    await buckets.write('export', 'trk/data-exports/x3/stale.csv', 'old');
    const manifest = await withBroken.run(
      job('x3', { objects: ['broken', 'customers'] }),
      new AbortController().signal,
    );
    expect(manifest.state).toBe('completed_with_errors');
    // Which object and which step, for the user; the engine's text (SQL, database, table) only in the log.
    expect(manifest.errors).toEqual([
      {
        object: 'broken',
        reason:
          'could not export broken: its records could not be read from the store; the export can be requested again',
      },
    ]);
    expect(manifest.files.map((f) => f.object)).toEqual(['customers']);
    const written = JSON.parse(
      readFileSync(join(dir, 'export', 'trk/data-exports/x3/complete.json'), 'utf8'),
    ) as typeof manifest;
    expect(written).toEqual(manifest);
    expect(readdirSync(join(dir, 'export', 'trk/data-exports/x3')).sort()).toEqual([
      'complete.json',
      'customers_00000.csv',
    ]);
  });

  it('exports what the schema declares before any data: a field with no column yet, an object with no table', async () => {
    const events = {
      ...EVENTS_OBJECT,
      columns: [...EVENTS_OBJECT.columns, { name: 'budget', type: 'decimal' as const }],
      declared: {
        kind: 'fields' as const,
        table: 'events',
        columns: [{ name: 'budget', type: 'number' as const }],
      },
    };
    const stores = {
      name: 'stores',
      from: '(SELECT * FROM {db}.obj_stores FINAL)',
      columns: [
        { name: 'store_id', type: 'string' as const },
        { name: 'size', type: 'decimal' as const },
      ],
      pageKey: ['store_id'],
      relations: [],
      declared: {
        kind: 'object' as const,
        table: 'obj_stores',
        columns: [
          { name: 'store_id', type: 'string' as const, primary: true },
          { name: 'size', type: 'number' as const },
        ],
      },
    };
    const declared = runnerOf({ forAccount: () => Promise.resolve(BUILT_IN_CATALOG.with(events, stores)) });
    for (const format of ['CSV', 'Parquet'] as const) {
      const id = `x5-${format}`;
      const manifest = await declared.run(
        job(id, { format, objects: ['events', 'stores'] }),
        new AbortController().signal,
      );
      expect(manifest.state).toBe('completed');
      expect(manifest.columns.stores).toEqual({ store_id: 'string', size: 'decimal' });
      expect(manifest.columns.events).toMatchObject({ budget: 'decimal' });
      expect(manifest.files.filter((f) => f.object === 'stores').map((f) => f.rows)).toEqual([0]);
      if (format === 'CSV') {
        const eventRows = manifest.files
          .filter((f) => f.object === 'events')
          .flatMap((f) => readCsv(join(dir, f.path)));
        expect(eventRows).toHaveLength(20);
        expect(eventRows.every((r) => r.budget === '')).toBe(true);
        const storesFile = manifest.files.find((f) => f.object === 'stores')!;
        expect(readFileSync(join(dir, storesFile.path), 'utf8')).toBe('store_id,size\n');
      }
    }
  });

  it('stops between pages when aborted, writing no complete.json', async () => {
    const abort = new AbortController();
    abort.abort(new Error('stopping'));
    await expect(runner.run(job('x4', { objects: ['events'] }), abort.signal)).rejects.toThrow('stopping');
    expect(existsSync(join(dir, 'export', 'trk/data-exports/x4/complete.json'))).toBe(false);
  });

  it('joins a relation path, filters with bound values and sorts each file', async () => {
    const manifest = await runner.run(
      job('x2', {
        objects: ['events'],
        select: {
          object: 'events',
          fields: ['event_id', 'customer.email', 'days_since_last_visit'],
          filter: {
            and: [
              { field: 'customer.opted_in', operator: '=', value: true },
              { field: 'action', operator: 'like', value: 'add%' },
            ],
          },
          sorts: [{ field: 'days_since_last_visit', order: 'desc' }],
        },
      }),
      new AbortController().signal,
    );
    const rows = manifest.files.flatMap((f) => readCsv(join(dir, f.path)));
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(['c0@x.com', 'c2@x.com']).toContain(r['customer.email']);
    expect(manifest.columns.events).toEqual({
      event_id: 'string',
      'customer.email': 'string',
      days_since_last_visit: 'integer',
    });
  });
});

describe('CSV numbers', () => {
  it('are written in plain decimal notation, never with an exponent (spec/NOTES.md "Exports")', async () => {
    const db = await (await DuckDBInstance.create(':memory:')).connect();
    for (const statement of DUCKDB_SETUP) await db.run(statement);
    const values: [number | null, string | null][] = [
      [1e20, '100000000000000000000'],
      [-2.5e21, '-2500000000000000000000'],
      [123456789012345678, '123456789012345680'],
      [1e-7, '0.0000001'],
      [-3.25e-9, '-0.00000000325'],
      [0.1, '0.1'],
      [3.14159, '3.14159'],
      [-2.3, '-2.3'],
      [0, '0.0'],
      [-1.5e300, `-15${'0'.repeat(299)}`],
      [5e-324, `0.${'0'.repeat(323)}5`],
      [null, null],
    ];
    for (const [value, text] of values) {
      const stmt = await db.prepare(`SELECT ${plainNumber('CAST($1 AS DOUBLE)')} AS v`);
      stmt.bind([value === null ? null : String(value)]);
      const got = (await stmt.runAndReadAll()).getRowsJS()[0]![0];
      expect({ value, got }).toEqual({ value, got: text });
    }
    db.closeSync();
  });
});

describe('CSV decimals', () => {
  it('are written with every digit they hold and no padding of the scale, never as doubles', async () => {
    const db = await (await DuckDBInstance.create(':memory:')).connect();
    for (const statement of DUCKDB_SETUP) await db.run(statement);
    const values: [string | null, string | null][] = [
      ['99999999999999.9999', '99999999999999.9999'],
      ['123456789012345678', '123456789012345678'],
      ['-123456789012345678', '-123456789012345678'],
      ['0.0001', '0.0001'],
      ['-0.5', '-0.5'],
      ['120.50', '120.5'],
      ['80', '80'],
      ['0', '0'],
      [null, null],
    ];
    for (const [value, text] of values) {
      const stmt = await db.prepare(`SELECT ${plainDecimal(`CAST($1 AS ${DECIMAL_TYPE})`)} AS v`);
      stmt.bind([value]);
      const got = (await stmt.runAndReadAll()).getRowsJS()[0]![0];
      expect({ value, got }).toEqual({ value, got: text });
    }
    db.closeSync();
  });
});

describe('page queries', () => {
  it('continue after the last key of the page before, in the table order, with bound values', () => {
    expect(pageQuery(EVENTS_OBJECT, undefined, 10).sql).toMatch(
      /ORDER BY `svc_id`, `ts`, `event_id` LIMIT 10$/,
    );
    const next = pageQuery(EVENTS_OBJECT, ["c'1", 1700000000000, 'e9'], 10);
    expect(next.sql).toContain(
      "WHERE `svc_id` >= {k0:String} AND (`svc_id`, `ts`, `event_id`) > ({k0:String}, fromUnixTimestamp64Milli({k1:Int64}, 'UTC'), {k2:String})",
    );
    expect(next.params).toEqual({ k0: "c'1", k1: 1700000000000, k2: 'e9' });
    expect(pageQuery(CUSTOMERS_OBJECT, ['c9'], 10).sql).toMatch(/WHERE `svc_id` > \{k0:String\} ORDER BY/);
  });
});
