import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { ApiError } from '@cdp/contracts';
import { BUILT_IN_CATALOG, ExportCatalog, type ExportObject } from './export-objects.js';
import { exportDetailOf, type ExportRequest, type ExportSelect, type Filter } from './export-request.js';

/** A request the API's DTOs have passed, read as the export's detail. */
const parseExportRequest = (body: ExportRequest) => exportDetailOf(body);
import { compileSelect } from './select.compiler.js';

/** A catalog shaped like the one products will bring: a self-relation two levels deep. */
const ITEMS: ExportObject = {
  name: 'items',
  from: '{db}.items',
  columns: [
    { name: 'id', type: 'string' },
    { name: 'name', type: 'string' },
    { name: 'price', type: 'number' },
    { name: 'qty', type: 'integer' },
    { name: 'active', type: 'boolean' },
    { name: 'at', type: 'timestamp' },
    { name: 'parent_id', type: 'string' },
  ],
  pageKey: ['id'],
  relations: [{ name: 'parent', childObject: 'items', joinFields: [{ parent: 'parent_id', child: 'id' }] }],
};
const catalog = new ExportCatalog([ITEMS]);

/** Rows the compiled SQL runs over in DuckDB, so each operator is checked by what it selects. */
const ROWS = [
  ['a', 'Red_Shoe', 10.5, 1, true, '2024-01-01T00:00:00Z', null],
  ['b', 'red shoe', 20, 2, false, '2024-06-01T00:00:00Z', 'a'],
  ['c', 'Blue 100%', null, 3, null, null, 'b'],
  ['d', null, 5, null, true, '2025-01-01T00:00:00Z', 'b'],
] as const;

describe('select compiler', () => {
  let db: DuckDBConnection;
  beforeAll(async () => {
    db = await (await DuckDBInstance.create(':memory:')).connect();
    await db.run(`SET TimeZone = 'UTC'`);
    await db.run(
      `CREATE TABLE items (id VARCHAR, name VARCHAR, price DOUBLE, qty BIGINT, active BOOLEAN, "at" TIMESTAMPTZ, parent_id VARCHAR)`,
    );
    for (const r of ROWS) {
      const p = await db.prepare(
        'INSERT INTO items VALUES ($1, $2, $3, $4, $5, CAST($6 AS TIMESTAMPTZ), $7)',
      );
      p.bind([...r]);
      await p.run();
    }
  });

  /** The ids a select's filter keeps, run by DuckDB over the rows above. */
  async function ids(filter: Filter, sorts?: ExportSelect['sorts']): Promise<string[]> {
    const select = parseExportRequest({ select: { object: 'items', fields: ['id'], filter, sorts } }).select!;
    const plan = compileSelect(select, catalog);
    const joins = plan.joins
      .map(
        (j) =>
          ` LEFT JOIN items AS ${j.alias} ON ${j.from}."${j.relation.joinFields[0]!.parent}" = ${j.alias}."${j.relation.joinFields[0]!.child}"`,
      )
      .join('');
    const sql = `SELECT t0.id FROM items AS t0${joins} WHERE ${plan.where} ORDER BY ${plan.orderBy ?? 't0.id'}`;
    const stmt = await db.prepare(sql);
    if (plan.params.length) stmt.bind(plan.params);
    return (await stmt.runAndReadAll()).getRowsJS().map((r) => r[0] as string);
  }
  const cmp = (field: string, operator: string, value: unknown) => ({ field, operator, value }) as Filter;

  it.each([
    ['=', 'qty', 2, ['b']],
    ['!=', 'qty', 2, ['a', 'c']],
    ['>', 'price', 10, ['a', 'b']],
    ['>=', 'price', 10.5, ['a', 'b']],
    ['<', 'qty', 2, ['a']],
    ['<=', 'qty', 2, ['a', 'b']],
    ['<', 'price', 1e20, ['a', 'b', 'd']],
    ['>', 'qty', -1e300, ['a', 'b', 'c']],
    ['=', 'price', '20', ['b']],
    ['=', 'active', true, ['a', 'd']],
    ['=', 'name', 'red shoe', ['b']],
    ['>', 'at', '2024-03-01', ['b', 'd']],
    ['<', 'at', 1709251200, ['a']],
    ['like', 'name', 'Red%', ['a']],
    ['not like', 'name', 'Red%', ['b', 'c']],
    ['ilike', 'name', 'red%', ['a', 'b']],
    ['not ilike', 'name', 'red%', ['c']],
    ['is', 'name', null, ['d']],
    ['is not', 'price', null, ['a', 'b', 'd']],
  ])('%s on %s %j', async (operator, field, value, expected) => {
    expect(await ids(cmp(field, operator, value))).toEqual(expected);
  });

  it('treats only % as a wildcard: _ and backslash match themselves', async () => {
    expect(await ids(cmp('name', 'like', 'Red_Shoe'))).toEqual(['a']);
    expect(await ids(cmp('name', 'ilike', 'red_shoe'))).toEqual(['a']);
    expect(await ids(cmp('name', 'like', 'red_shoe'))).toEqual([]);
    expect(await ids(cmp('name', 'like', '%100\\%'))).toEqual([]);
    expect(await ids(cmp('name', 'like', '%100%'))).toEqual(['c']);
  });

  it('negates with not, leaving NULLs out as SQL does (not of unknown is unknown)', async () => {
    expect(await ids({ not: cmp('qty', '=', 2) })).toEqual(['a', 'c']); // d's qty is NULL
    expect(await ids({ not: cmp('name', 'is', null) })).toEqual(['a', 'b', 'c']);
    expect(await ids({ not: { or: [cmp('qty', '=', 1), cmp('qty', '=', 3)] } })).toEqual(['b']);
    expect(await ids({ not: { not: cmp('active', '=', true) } })).toEqual(['a', 'd']);
  });

  it('nests and/or to any depth', async () => {
    const filter: Filter = {
      or: [
        { and: [cmp('qty', '>=', 2), { or: [cmp('name', 'is', null), cmp('active', '=', false)] }] },
        { and: [{ and: [{ and: [cmp('id', '=', 'a')] }] }] },
      ],
    };
    expect(await ids(filter)).toEqual(['a', 'b']);
    let deep: Filter = cmp('id', '=', 'c');
    for (let i = 0; i < 200; i++) deep = i % 2 ? { and: [deep] } : { or: [deep] };
    expect(await ids(deep)).toEqual(['c']);
  });

  it('filters and sorts through relation paths, two levels deep', async () => {
    expect(await ids(cmp('parent.name', 'ilike', 'red%'))).toEqual(['b', 'c', 'd']);
    expect(await ids(cmp('parent.parent.id', '=', 'a'))).toEqual(['c', 'd']);
    expect(await ids(cmp('qty', 'is not', null), [{ field: 'parent.id', order: 'desc' }])).toEqual([
      'c',
      'b',
      'a',
    ]);
  });

  it('never puts a value in the SQL text: hostile values are parameters and match literally', async () => {
    const evil = [`x' OR '1'='1`, `'); DROP TABLE items; --`, `"; SELECT 1; --`, `\\' OR 1=1 --`];
    for (const value of evil) {
      const select = parseExportRequest({
        select: {
          object: 'items',
          fields: ['id'],
          filter: { or: [cmp('name', '=', value), cmp('name', 'like', value)] },
        },
      }).select!;
      const plan = compileSelect(select, catalog);
      expect(plan.where).not.toContain(value);
      expect(plan.where).toMatch(
        /^\(\(t0\."name" = CAST\(\$1 AS VARCHAR\)\) OR \(t0\."name" LIKE \$2 ESCAPE '\\'\)\)$/,
      );
      expect(await ids(select.filter!)).toEqual([]);
    }
    expect(await ids(cmp('id', 'is not', null))).toHaveLength(4); // the table is still there
  });

  it('expands ["*"] to every field of the object and names relation columns by their path', () => {
    const plan = compileSelect({ object: 'items', fields: ['*', 'parent.name'] }, catalog);
    expect(plan.columns.map((c) => c.name)).toEqual([...ITEMS.columns.map((c) => c.name), 'parent.name']);
    expect(plan.joins).toHaveLength(1);
  });

  it('joins each relation path once, however often it is used', () => {
    const plan = compileSelect(
      {
        object: 'items',
        fields: ['parent.name', 'parent.id', 'parent.parent.name'],
        filter: { field: 'parent.qty', operator: '>', value: 1 },
        sorts: [{ field: 'parent.parent.id', order: 'asc' }],
      },
      catalog,
    );
    expect(plan.joins.map((j) => j.path)).toEqual(['parent', 'parent.parent']);
  });

  function status(run: () => unknown): { status: number; detail: unknown } {
    try {
      run();
    } catch (err) {
      if (err instanceof ApiError) return { status: err.status, detail: err.detail };
      throw err;
    }
    throw new Error('no error');
  }

  it('404 for a missing object, field or relation, named as the spec says', () => {
    expect(status(() => compileSelect({ object: 'nope', fields: ['id'] }, catalog))).toEqual({
      status: 404,
      detail: { message: 'unable to locate object nope' },
    });
    expect(status(() => compileSelect({ object: 'items', fields: ['nope'] }, catalog))).toEqual({
      status: 404,
      detail: { message: 'unable to locate field items.nope' },
    });
    expect(status(() => compileSelect({ object: 'items', fields: ['owner.name'] }, catalog))).toEqual({
      status: 404,
      detail: { message: 'unable to locate relation items.owner' },
    });
    expect(status(() => compileSelect({ object: 'items', fields: ['parent.nope'] }, catalog)).status).toBe(
      404,
    );
    expect(
      status(() =>
        compileSelect({ object: 'items', fields: ['id'], filter: cmp('parent.nope', '=', 'x') }, catalog),
      ).status,
    ).toBe(404);
    expect(
      status(() =>
        compileSelect({ object: 'items', fields: ['id'], sorts: [{ field: 'nope', order: 'asc' }] }, catalog),
      ).status,
    ).toBe(404);
  });

  it('400 for a value of the wrong type for its field', () => {
    for (const f of [
      cmp('qty', '=', 'many'),
      cmp('active', '=', 'yes'),
      cmp('at', '>', 'not a date'),
      cmp('name', '=', true),
    ]) {
      const select = parseExportRequest({ select: { object: 'items', fields: ['id'], filter: f } }).select!;
      expect(status(() => compileSelect(select, catalog)).status).toBe(400);
    }
  });

  it('follows the built-in relations: events → customer and product, products → parent_product', () => {
    const plan = compileSelect(
      { object: 'events', fields: ['event_id', 'customer.email', 'product.parent_product.name'] },
      BUILT_IN_CATALOG,
    );
    expect(plan.joins.map((j) => j.object.name)).toEqual(['customers', 'products', 'products']);
    expect(
      status(() => compileSelect({ object: 'products', fields: ['customer.email'] }, BUILT_IN_CATALOG)),
    ).toEqual({ status: 404, detail: { message: 'unable to locate relation products.customer' } });
  });
});
