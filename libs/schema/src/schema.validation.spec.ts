import { ApiError, type Invalid } from '@cdp/contracts';
import { AccountSchema } from './account-schema.js';
import { isPlural, snakeCaseProblem } from './naming.rules.js';
import { EMPTY_SCHEMA_DOC, type AccountSchemaDoc } from './schema.model.js';
import {
  parseNewFields,
  parseNewRelation,
  parseObject,
  type NewObject,
  type NewRelation,
} from './schema.validation.js';

const empty = () => new AccountSchema(structuredClone(EMPTY_SCHEMA_DOC), 0);

function invalidsOf(call: () => unknown): Invalid[] {
  try {
    call();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    return (err as ApiError & { detail: { invalids: Invalid[] } }).detail.invalids;
  }
  throw new Error('expected a 400');
}

const stores: NewObject = {
  name: 'stores',
  display_name: 'Stores',
  alias: 'store',
  fields: [
    { name: 'store_id', type: 'string', display_name: 'Store ID', primary: true },
    { name: 'size', type: 'number', display_name: 'Size' },
  ],
};

describe('naming rules', () => {
  it.each(['a', 'stores', 'line_items', 'a1_b2', 'x'.repeat(64)])('%s is lower snake case', (n) => {
    expect(snakeCaseProblem(n)).toBeUndefined();
  });
  it.each([
    '',
    ' ',
    'Stores',
    '1stores',
    '_stores',
    'stores_',
    'my__stores',
    'my-stores',
    'my stores',
    'störes',
    'x'.repeat(65),
  ])('%p is not', (n) => {
    expect(snakeCaseProblem(n)).toBeDefined();
  });
  it('tells plural from singular by the last word', () => {
    expect(['stores', 'line_items', 'classes', 'statuses'].map(isPlural)).toEqual([true, true, true, true]);
    expect(['store', 'line_item', 'class', 'status', 'analysis'].map(isPlural)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});

describe('creating an object', () => {
  it('builds the object from a valid payload; fields made by the account', () => {
    const object = parseObject(stores, empty());
    expect(object).toMatchObject({
      name: 'stores',
      alias: 'store',
      table: 'obj_stores',
      created_by: 'account',
    });
    expect(object.fields.map((f) => [f.name, f.primary, f.created_by, f.auto])).toEqual([
      ['store_id', true, 'account', false],
      ['size', false, 'account', false],
    ]);
  });

  it('refuses a name, alias or display name another object uses, built-in ones included', () => {
    expect(invalidsOf(() => parseObject({ ...stores, name: 'products', alias: undefined }, empty()))).toEqual(
      [{ field: 'name', reason: 'already used by object products' }],
    );
    expect(invalidsOf(() => parseObject({ ...stores, alias: 'product' }, empty()))).toEqual([
      { field: 'alias', reason: 'already used by object products' },
    ]);
    expect(invalidsOf(() => parseObject({ ...stores, display_name: ' customers ' }, empty()))).toEqual([
      { field: 'display_name', reason: 'already used by object customers' },
    ]);
    const doc: AccountSchemaDoc = { objects: [parseObject(stores, empty())], extensions: {} };
    const withStores = new AccountSchema(doc, 1);
    // An alias is a name too: a new object may not be called after another's alias.
    const other = { ...stores, name: 'shops', display_name: 'Shops', alias: 'store' };
    expect(invalidsOf(() => parseObject(other, withStores))).toEqual([
      { field: 'alias', reason: 'already used by object stores' },
    ]);
    expect(
      invalidsOf(() => parseObject({ ...stores, display_name: 'Shops', alias: 'shop' }, withStores)),
    ).toEqual([{ field: 'name', reason: 'already used by object stores' }]);
  });

  it('refuses duplicate field names and display names, by index', () => {
    const invalids = invalidsOf(() =>
      parseObject(
        {
          ...stores,
          fields: [
            ...stores.fields,
            { name: 'size', type: 'number', display_name: 'Size again' },
            { name: 'area', type: 'number', display_name: 'SIZE' },
          ],
        },
        empty(),
      ),
    );
    expect(invalids).toEqual([
      { field: 'fields.2.name', reason: expect.stringMatching(/^already used/) },
      { field: 'fields.3.display_name', reason: 'already used by field size' },
    ]);
  });

  it('checks relations: the child exists, joins reach its whole primary key with matching types', () => {
    const rel = (r: Pick<NewRelation, 'child_object' | 'join_fields'>): NewObject => ({
      ...stores,
      relations: [{ name: 'home', display_name: 'Home', ...r }],
    });
    expect(
      invalidsOf(() =>
        parseObject(
          rel({ child_object: 'planets', join_fields: [{ parent: 'store_id', child: 'x' }] }),
          empty(),
        ),
      ),
    ).toEqual([{ field: 'relations.0.child_object', reason: 'unable to locate object planets' }]);
    expect(
      invalidsOf(() =>
        parseObject(
          rel({ child_object: 'products', join_fields: [{ parent: 'size', child: 'product_id' }] }),
          empty(),
        ),
      ),
    ).toEqual([
      { field: 'relations.0.join_fields.0.parent', reason: expect.stringContaining('does not match') },
    ]);
    expect(
      invalidsOf(() =>
        parseObject(
          rel({ child_object: 'products', join_fields: [{ parent: 'store_id', child: 'name' }] }),
          empty(),
        ),
      ),
    ).toEqual([
      {
        field: 'relations.0.join_fields.0.child',
        reason: expect.stringContaining('not a primary-key field'),
      },
    ]);
    const ok = parseObject(
      rel({ child_object: 'products', join_fields: [{ source: 'store_id', target: 'product_id' }] }),
      empty(),
    );
    expect(ok.relations).toEqual([
      {
        name: 'home',
        display_name: 'Home',
        child_object: 'products',
        join_fields: [{ parent: 'store_id', child: 'product_id' }],
        created_by: 'account',
      },
    ]);
    // A relation to the object itself, as products → parent_product.
    const self = parseObject(
      rel({ child_object: 'stores', join_fields: [{ parent: 'store_id', child: 'store_id' }] }),
      empty(),
    );
    expect(self.relations[0]!.child_object).toBe('stores');
  });
});

describe('adding fields and relations', () => {
  const customers = () => empty().object('customers')!;

  it('adds one field, or several with {fields}, never a primary key', () => {
    expect(parseNewFields({ name: 'tier', type: 'number', display_name: 'Tier' }, customers())).toMatchObject(
      {
        many: false,
        fields: [{ name: 'tier', type: 'number', created_by: 'account', auto: false, primary: false }],
      },
    );
    expect(
      parseNewFields(
        {
          fields: [
            { name: 'a', type: 'text', display_name: 'A' },
            { name: 'b', type: 'boolean', display_name: 'B' },
          ],
        },
        customers(),
      ).fields,
    ).toHaveLength(2);
    expect(
      invalidsOf(() =>
        parseNewFields({ name: 'x', type: 'string', display_name: 'X', primary: true }, customers()),
      ),
    ).toEqual([
      { field: 'primary', reason: expect.stringContaining('only be set when the object is created') },
    ]);
    // `primary_key` (another name for it) is named as sent, alone or in a list.
    expect(
      invalidsOf(() =>
        parseNewFields({ name: 'x', type: 'string', display_name: 'X', primary_key: true }, customers()),
      ),
    ).toEqual([{ field: 'primary_key', reason: expect.stringContaining('only be set when') }]);
    expect(
      invalidsOf(() =>
        parseNewFields(
          { fields: [{ name: 'y', type: 'string', display_name: 'Y', primary_key: true }] },
          customers(),
        ),
      ),
    ).toEqual([{ field: 'fields.0.primary_key', reason: expect.stringContaining('only be set when') }]);
  });

  it('refuses names of built-in fields and the identifier fields of customers', () => {
    for (const name of ['email', 'svc_id', 'vuid', 'ios_push_tokens', 'svc_alias_cart'])
      expect(
        invalidsOf(() => parseNewFields({ name, type: 'string', display_name: `D ${name}` }, customers())),
      ).toEqual([{ field: 'name', reason: expect.stringMatching(/^already used/) }]);
  });

  it('adds a relation whose name no field or relation of the object has', () => {
    const events = empty().object('events')!;
    expect(
      invalidsOf(() =>
        parseNewRelation(
          {
            name: 'product',
            display_name: 'P2',
            child_object: 'products',
            join_fields: [{ parent: 'product_id', child: 'product_id' }],
          },
          events,
          empty(),
        ),
      ),
    ).toEqual([{ field: 'name', reason: 'already used by a relation of events' }]);
    expect(
      invalidsOf(() =>
        parseNewRelation(
          {
            name: 'page',
            display_name: 'P3',
            child_object: 'products',
            join_fields: [{ parent: 'product_id', child: 'product_id' }],
          },
          events,
          empty(),
        ),
      ),
    ).toEqual([{ field: 'name', reason: 'already used by a field of events' }]);
  });
});

describe('built-in objects', () => {
  it('carry their fields, made by svc, and the built-in relations', () => {
    const schema = empty();
    expect(schema.objects().map((o) => o.name)).toEqual([
      'customers',
      'events',
      'products',
      'orders',
      'line_items',
    ]);
    for (const o of schema.objects()) {
      expect(o.fields.every((f) => f.auto && f.created_by === 'svc')).toBe(true);
      expect(o.fields.some((f) => f.primary)).toBe(true);
    }
    expect(schema.object('product')!.relations).toEqual([
      expect.objectContaining({
        name: 'parent_product',
        child_object: 'products',
        join_fields: [{ parent: 'parent_product_id', child: 'product_id' }],
      }),
    ]);
    expect(schema.object('events')!.relations.map((r) => r.name)).toEqual(['product', 'customer']);
    expect(schema.object('line_items')!.relations.map((r) => r.name)).toEqual(['product']);
    expect(schema.object('orders')!.relations.map((r) => r.name)).toEqual(['customer']);
  });
});
