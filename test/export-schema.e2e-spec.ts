import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { parse } from 'csv-parse/sync';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { exportDirOnDisk, type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { type ExportRecord, type Manifest, type ManifestFile, runExport } from './support/exports.js';
import { postWithKey } from './support/api-calls.js';
import { declareField, storesObject } from './support/schema-objects.js';

/**
 * Exports follow the schema, not the data: a declared field is a column from the moment it exists
 * (empty until a value comes), an object with no records exports its header, custom numbers are
 * written exactly (CSV text, Parquet DECIMAL), and a failure's reason is written for the user.
 */
const ENV = { CDP_EXPORT_POLL_MS: '50' };

interface Finished {
  record: ExportRecord;
  manifest: Manifest;
  dir: string;
}

/** Custom numbers at the limits (spec "Data types": 18 digits, 4 after the point), sent as text. */
const BUDGETS = { 'ann@example.com': '99999999999999.9999', 'bob@example.com': '123456789012345678' };
const STORES = [
  { store_id: 's1', city: 'Oslo', size: '-0.0001', opened: 1_700_000_000, open: true },
  { store_id: 's2', city: 'Rome', size: '99999999999999.9999' },
];

describe.each(WIRINGS)('exports follow the schema (%s)', (wiring, start) => {
  let p: Platform;
  let acc: TestAccount;

  beforeAll(async () => ({ p, acc } = await startWithAccount(start, undefined, ENV)), 90_000);
  afterAll(() => p.close(), 30_000);

  const send = (path: string, body: unknown, key = acc.privateKey) => postWithKey(p, key, path, body);

  async function exportOf(body: unknown, account = acc): Promise<Finished> {
    const exported = await runExport(p, account.privateKey, body as object);
    expect(['completed', 'completed_with_errors']).toContain(exported.record.state);
    return { record: exported.record, manifest: exported.manifest(), dir: exported.dir };
  }

  /** A file of the manifest, found through its path as written (the record's bucket first). */
  const fileOf = (f: ManifestFile) => exportDirOnDisk(p, f.path);
  const filesOf = (m: Manifest, object: string) => m.files.filter((f) => f.object === object);
  const header = (f: ManifestFile) => readFileSync(fileOf(f), 'utf8').split('\n')[0]!.split(',');
  const csvRows = (m: Manifest, object: string) =>
    filesOf(m, object).flatMap((f) =>
      parse<Record<string, string>>(readFileSync(fileOf(f)), { columns: true }),
    );

  /** Each Parquet column's type as DuckDB reads it, and the values as text (exact for decimals). */
  async function parquetOf(f: ManifestFile) {
    const db = await (await DuckDBInstance.create(':memory:')).connect();
    try {
      const file = `'${fileOf(f).replaceAll("'", "''")}'`;
      const described = (await db.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${file})`))
        .getRowObjectsJS()
        .map((r) => [r.column_name as string, r.column_type as string] as const);
      const schema = (
        await db.runAndReadAll(
          `SELECT name, logical_type::VARCHAR AS logical FROM parquet_schema(${file}) WHERE name <> 'duckdb_schema'`,
        )
      ).getRowObjectsJS();
      const columns = described.map(([name]) => `CAST("${name}" AS VARCHAR) AS "${name}"`);
      const rows = (
        await db.runAndReadAll(`SELECT ${columns.join(', ')} FROM read_parquet(${file})`)
      ).getRowObjectsJS();
      return { types: Object.fromEntries(described), schema, rows };
    } finally {
      db.closeSync();
    }
  }

  it('exports declared fields and objects before, between and after writes: columns, empty values, exact decimals', async () => {
    // The schema first: custom fields of built-in objects, an object of the account's own, a relation.
    const created = await Promise.all([
      send('/v3/schema/objects/customers/fields', {
        fields: [
          { name: 'budget', type: 'number', display_name: 'Budget' },
          { name: 'member_since', type: 'timestamp', display_name: 'Member since' },
        ],
      }),
      send('/v3/schema/objects/events/fields', {
        fields: [
          { name: 'store_id', type: 'string', display_name: 'Store' },
          { name: 'amount', type: 'number', display_name: 'Amount' },
        ],
      }),
      send(
        '/v3/schema/objects',
        storesObject(
          'string',
          { name: 'size', type: 'number', display_name: 'Size' },
          { name: 'opened', type: 'timestamp', display_name: 'Opened' },
          { name: 'open', type: 'boolean', display_name: 'Open' },
        ),
      ),
    ]);
    expect(created.map((r) => r.status)).toEqual([201, 201, 201]);
    const relation = await send('/v3/schema/objects/events/relations', {
      name: 'store',
      display_name: 'Store',
      child_object: 'stores',
      join_fields: [{ parent: 'store_id', child: 'store_id' }],
    });
    expect(relation.status).toBe(201);

    // Before any record: every object, its declared columns, one header-only file each.
    const before = await exportOf({ objects: ['customers', 'events', 'stores'] });
    expect(before.record.state).toBe('completed');
    expect(before.record.errors).toBeUndefined();
    expect(filesOf(before.manifest, 'stores').map((f) => f.rows)).toEqual([0]);
    expect(header(filesOf(before.manifest, 'stores')[0]!)).toEqual([
      'store_id',
      'city',
      'size',
      'opened',
      'open',
    ]);
    expect(header(filesOf(before.manifest, 'customers')[0]!)).toEqual(
      expect.arrayContaining(['email', 'budget', 'member_since']),
    );
    expect(header(filesOf(before.manifest, 'events')[0]!)).toEqual(
      expect.arrayContaining(['type', 'store_id', 'amount']),
    );
    expect(before.manifest.columns.stores).toEqual({
      store_id: 'string',
      city: 'string',
      size: 'decimal',
      opened: 'timestamp',
      open: 'boolean',
    });
    expect(before.manifest.columns.customers).toMatchObject({ budget: 'decimal', member_since: 'timestamp' });

    // A select touching fields with no values yet, across the relation, filtered and sorted by them.
    const emptySelect = {
      object: 'events',
      fields: ['type', 'amount', 'store.size', 'store.city'],
      filter: {
        or: [
          { field: 'amount', operator: '>', value: '1.5' },
          { field: 'store.size', operator: 'is', value: null },
        ],
      },
      sorts: [{ field: 'amount', order: 'desc' }],
    };
    const selected = await exportOf({ select: emptySelect });
    expect(selected.record.state).toBe('completed');
    expect(header(selected.manifest.files[0]!)).toEqual(['type', 'amount', 'store.size', 'store.city']);
    const emptyParquet = await exportOf({ format: 'Parquet', objects: ['stores'] });
    expect(emptyParquet.record.state).toBe('completed');
    const noRows = await parquetOf(emptyParquet.manifest.files[0]!);
    expect(noRows.rows).toEqual([]);
    expect(noRows.types).toMatchObject({ store_id: 'VARCHAR', size: 'DECIMAL(22,4)', open: 'BOOLEAN' });

    // Writes: the API may cache the schema a moment; a probe tells when the fields are known.
    await eventually(async () => {
      const r = await send(
        '/v3/events',
        { type: 'visit', identifiers: { vuid: 'v-probe' }, data: { store_id: 's0' } },
        acc.publicKey,
      );
      return r.status === 202 && r.body.dropped === undefined;
    }, 30_000);
    await send(
      '/v3/profiles',
      Object.entries(BUDGETS).map(([email, budget]) => ({ attributes: { email, budget } })),
      acc.publicKey,
    ).expect(202);
    await send('/v3/objects/stores', STORES, acc.publicKey).expect(202);
    await send(
      '/v3/events',
      [
        { type: 'visit', identifiers: { email: 'ann@example.com' }, data: { store_id: 's1', amount: '0.5' } },
        {
          type: 'visit',
          identifiers: { email: 'bob@example.com' },
          data: { store_id: 's2', amount: '12.25' },
        },
      ],
      acc.publicKey,
    ).expect(202);

    // Between writes: a field declared now is a column of the rows already there, empty.
    await declareField(p, acc.privateKey, 'customers', {
      name: 'tier',
      type: 'string',
      display_name: 'Tier',
    });
    const between = await eventually(async () => {
      const got = await exportOf({ objects: ['customers', 'stores'] });
      const budgets = csvRows(got.manifest, 'customers').filter((r) => r.budget !== '');
      if (budgets.length < 2 || csvRows(got.manifest, 'stores').length < 2) throw new Error('not stored yet');
      return got;
    }, 60_000);
    expect(between.record.state).toBe('completed');
    // The probe made a customer of its own, known by its vuid only.
    const customers = csvRows(between.manifest, 'customers').filter((c) => c.email !== '');
    expect(Object.fromEntries(customers.map((c) => [c.email, c.budget]))).toEqual(BUDGETS);
    expect(customers.every((c) => c.tier === '' && c.member_since === '')).toBe(true);
    expect(csvRows(between.manifest, 'stores').sort((a, b) => (a.store_id! < b.store_id! ? -1 : 1))).toEqual([
      { store_id: 's1', city: 'Oslo', size: '-0.0001', opened: '2023-11-14T22:13:20.000Z', open: 'true' },
      { store_id: 's2', city: 'Rome', size: '99999999999999.9999', opened: '', open: '' },
    ]);

    // After: the relation reaches the stores' exact sizes; Parquet holds them as DECIMAL, exactly.
    const related = await eventually(async () => {
      const got = await exportOf({
        select: {
          object: 'events',
          fields: ['store_id', 'amount', 'store.size'],
          filter: { field: 'amount', operator: '>=', value: '0.5' },
          sorts: [{ field: 'amount' }],
        },
      });
      if (csvRows(got.manifest, 'events').length < 2) throw new Error('not stored yet');
      return got;
    }, 60_000);
    expect(csvRows(related.manifest, 'events')).toEqual([
      { store_id: 's1', amount: '0.5', 'store.size': '-0.0001' },
      { store_id: 's2', amount: '12.25', 'store.size': '99999999999999.9999' },
    ]);
    const parquet = await exportOf({ format: 'Parquet', objects: ['customers', 'stores'] });
    expect(parquet.record.state).toBe('completed');
    const customerFile = await parquetOf(filesOf(parquet.manifest, 'customers')[0]!);
    expect(customerFile.types).toMatchObject({ budget: 'DECIMAL(22,4)', tier: 'VARCHAR' });
    expect(customerFile.schema.find((c) => c.name === 'budget')?.logical).toMatch(/DecimalType/);
    const known = customerFile.rows.filter((r) => r.email !== null);
    expect(Object.fromEntries(known.map((r) => [r.email, r.budget]))).toEqual({
      'ann@example.com': '99999999999999.9999',
      'bob@example.com': '123456789012345678.0000',
    });
    const storeFile = await parquetOf(filesOf(parquet.manifest, 'stores')[0]!);
    expect(storeFile.rows.map((r) => r.size).sort()).toEqual(['-0.0001', '99999999999999.9999']);
  }, 240_000);

  it("names the object and what went wrong in a failure's reason, never a path or an engine's text", async () => {
    const broken = await p.createAccount('broken');
    // The account's place in the export bucket cannot take files: a file stands where its folder goes.
    const tracker = exportDirOnDisk(p, `export/${broken.publicKey}`);
    mkdirSync(tracker, { recursive: true });
    writeFileSync(join(tracker, 'data-exports'), 'not a folder');
    const { record } = await runExport(p, broken.privateKey, { objects: ['customers', 'events'] });
    expect(record.state).toBe('completed_with_errors');
    expect(record.errors).toEqual(
      ['customers', 'events'].map((object) => ({
        object,
        reason: `could not export ${object}: its files could not be placed in the export bucket; the export can be requested again`,
      })),
    );
  });

  // Only the embedded wiring lets a test reach into the store to break it.
  (wiring === 'embedded' ? it : it.skip)(
    'a store fault gives the same kind of reason, without SQL, database or table names',
    async () => {
      if (!(p instanceof EmbeddedPlatform)) throw new Error('the store is reachable only in one process');
      const faulty = await p.createAccount('faulty');
      await p.query(faulty.id, 'SELECT 1');
      await p.query(faulty.id, 'DROP TABLE {db}.products');
      const { record } = await exportOf({ objects: ['products', 'customers'] }, faulty);
      expect(record.state).toBe('completed_with_errors');
      expect(record.errors).toEqual([
        {
          object: 'products',
          reason:
            'could not export products: its records could not be read from the store; the export can be requested again',
        },
      ]);
    },
  );
});
