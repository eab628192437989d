import { CUSTOMER_FIELDS, EVENT_COLUMN_FIELDS, EVENT_DATA_FIELDS } from '@cdp/domain';

/** The types an exported column has; they decide the Parquet type and how CSV writes the value. */
export type ColumnType = 'string' | 'number' | 'integer' | 'boolean' | 'timestamp';

export interface ExportColumn {
  name: string;
  type: ColumnType;
  /** The ClickHouse expression giving the column (default: the table column of the same name). */
  expr?: string;
}

export interface JoinField {
  /** The foreign-key field on the object holding the relation. */
  parent: string;
  /** The related object's key field. */
  child: string;
}

/** A relation as the schema API describes it (spec "Schema resources"): the holder is the parent. */
export interface ExportRelation {
  name: string;
  childObject: string;
  joinFields: JoinField[];
}

/**
 * One exportable object: where its current rows come from in the account's database, its columns,
 * and the relations selects may follow.
 */
export interface ExportObject {
  name: string;
  /** The FROM clause in ClickHouse SQL; `{db}` is the account's database. */
  from: string;
  columns: ExportColumn[];
  /**
   * Columns that order the rows uniquely, a prefix of the table's sorting key, so the rows are read
   * page by page in key order (the engine reads in order and stops at the page's end).
   */
  pageKey: string[];
  relations: ExportRelation[];
}

/**
 * The built-in relations (spec/NOTES.md "Built-in relations"). Each holds only when both objects
 * exist in the catalog, so adding products, orders or line items brings their relations along.
 */
export const BUILT_IN_RELATIONS: readonly (ExportRelation & { parentObject: string })[] = [
  {
    parentObject: 'events',
    name: 'product',
    childObject: 'products',
    joinFields: [{ parent: 'product_id', child: 'product_id' }],
  },
  {
    parentObject: 'line_items',
    name: 'product',
    childObject: 'products',
    joinFields: [{ parent: 'product_id', child: 'product_id' }],
  },
  {
    parentObject: 'products',
    name: 'parent_product',
    childObject: 'products',
    joinFields: [{ parent: 'parent_product_id', child: 'product_id' }],
  },
  {
    parentObject: 'events',
    name: 'customer',
    childObject: 'customers',
    joinFields: [{ parent: 'svc_id', child: 'svc_id' }],
  },
  {
    parentObject: 'orders',
    name: 'customer',
    childObject: 'customers',
    joinFields: [{ parent: 'svc_id', child: 'svc_id' }],
  },
];

/** The objects one account can export, with the relations between them. */
export class ExportCatalog {
  private readonly objects = new Map<string, ExportObject>();

  constructor(objects: readonly ExportObject[]) {
    for (const o of objects) this.objects.set(o.name, o);
  }

  /** A catalog with more objects (custom objects of the schema catalog, products, orders, …). */
  with(...objects: ExportObject[]): ExportCatalog {
    return new ExportCatalog([...this.objects.values(), ...objects]);
  }

  names(): string[] {
    return [...this.objects.keys()];
  }

  object(name: string): ExportObject | undefined {
    return this.objects.get(name);
  }

  /** The object's own relations and the built-in ones, where the child object exists. */
  relation(objectName: string, name: string): ExportRelation | undefined {
    const own = this.objects.get(objectName)?.relations.find((r) => r.name === name);
    const found = own ?? BUILT_IN_RELATIONS.find((r) => r.parentObject === objectName && r.name === name);
    return found && this.objects.has(found.childObject) ? found : undefined;
  }
}

function fieldType(type: string): ColumnType {
  switch (type) {
    case 'integer':
      return 'integer';
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'timestamp':
      return 'timestamp';
    default:
      return 'string';
  }
}

/**
 * Customers: the current snapshot of each (the table keeps every version; FINAL keeps the highest).
 * `svc_id` is the platform's internal customer id, the key events join on.
 */
export const CUSTOMERS_OBJECT: ExportObject = {
  name: 'customers',
  from: '{db}.customers FINAL',
  columns: [
    { name: 'svc_id', type: 'string' },
    ...Object.entries(CUSTOMER_FIELDS).map(([name, type]) => ({ name, type: fieldType(type) })),
    { name: 'updated_at', type: 'timestamp' },
  ],
  pageKey: ['svc_id'],
  relations: [],
};

/** Events with their typed data columns; identifiers and the order payload as JSON text. */
export const EVENTS_OBJECT: ExportObject = {
  name: 'events',
  from: '{db}.events',
  columns: [
    { name: 'event_id', type: 'string' },
    { name: 'svc_id', type: 'string' },
    { name: 'ts', type: 'timestamp' },
    { name: 'received_at', type: 'timestamp' },
    { name: 'type', type: 'string' },
    { name: 'action', type: 'string' },
    { name: 'channel', type: 'string' },
    { name: 'identifiers', type: 'string', expr: 'toJSONString(identifiers)' },
    ...EVENT_COLUMN_FIELDS.map((name) => ({ name, type: fieldType(EVENT_DATA_FIELDS[name]!) })),
    { name: 'order', type: 'string', expr: '`order`' },
  ],
  pageKey: ['svc_id', 'ts', 'event_id'],
  relations: [],
};

/** What the store holds today; products, orders, line items and custom objects plug in with `with`. */
export const BUILT_IN_CATALOG = new ExportCatalog([CUSTOMERS_OBJECT, EVENTS_OBJECT]);

/**
 * Where the catalog of an account comes from. The built-in one serves every account the same
 * objects; a schema-backed one adds the account's custom objects.
 */
export abstract class ExportCatalogs {
  abstract forAccount(account: string): Promise<ExportCatalog>;
}

export class BuiltInExportCatalogs extends ExportCatalogs {
  forAccount(): Promise<ExportCatalog> {
    return Promise.resolve(BUILT_IN_CATALOG);
  }
}

/**
 * The one place that decides where catalogs come from, for the API and the worker alike: a
 * schema-backed implementation replaces the class here.
 */
export const EXPORT_CATALOGS_PROVIDER = { provide: ExportCatalogs, useClass: BuiltInExportCatalogs };
