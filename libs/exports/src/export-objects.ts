import {
  CUSTOMER_FIELDS,
  EVENT_COLUMN_FIELDS,
  EVENT_DATA_FIELDS,
  ORDER_FIELDS,
  ORDER_VALUE_FIELDS,
  PRODUCT_FIELDS,
} from '@cdp/domain';

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
  // Through the customer a record belongs to now, so a merged customer's history reaches its survivor.
  {
    parentObject: 'events',
    name: 'customer',
    childObject: 'customers',
    joinFields: [{ parent: 'customer_svc_id', child: 'svc_id' }],
  },
  {
    parentObject: 'orders',
    name: 'customer',
    childObject: 'customers',
    joinFields: [{ parent: 'customer_svc_id', child: 'svc_id' }],
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

/**
 * The customer a record belongs to now: its survivor when the customer was merged (the account's
 * `customer_survivors` view), itself otherwise. Scalar subqueries run once per query, not per row.
 */
function survivorOf(column: string): string {
  const merged = '{db}.customer_survivors';
  return `transform(ifNull(${column}, ''), (SELECT groupArray(svc_id) FROM ${merged}), (SELECT groupArray(survivor) FROM ${merged}), ifNull(${column}, ''))`;
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
  // A merged customer's profile lives on in its survivor: only customers that were not merged are exported.
  from: '(SELECT * FROM {db}.customers FINAL WHERE merged_into IS NULL)',
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
    { name: 'customer_svc_id', type: 'string', expr: survivorOf('svc_id') },
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

/** The product feed: the current version of each product (no history, spec "Product fields"). */
export const PRODUCTS_OBJECT: ExportObject = {
  name: 'products',
  from: '(SELECT * FROM {db}.products FINAL)',
  columns: [
    ...Object.entries(PRODUCT_FIELDS).map(([name, type]) => ({ name, type: fieldType(type) })),
    { name: 'updated_at', type: 'timestamp' },
  ],
  pageKey: ['product_id'],
  relations: [],
};

/** Order summaries: running tallies, revenue and lifecycle flag, as of the latest change. */
export const ORDERS_OBJECT: ExportObject = {
  name: 'orders',
  from: '(SELECT * FROM {db}.orders FINAL)',
  columns: [
    { name: 'order_id', type: 'string' },
    { name: 'svc_id', type: 'string' },
    { name: 'customer_svc_id', type: 'string', expr: survivorOf('svc_id') },
    { name: 'ts', type: 'timestamp' },
    { name: 'purchased', type: 'boolean' },
    { name: 'subtotal', type: 'number' },
    { name: 'total', type: 'number' },
    { name: 'revenue', type: 'number' },
    { name: 'counts_for_lifecycle', type: 'boolean' },
    { name: 'cancelled', type: 'boolean' },
    { name: 'partial', type: 'boolean' },
    { name: 'adjustments', type: 'integer' },
    ...ORDER_VALUE_FIELDS.map((name) => ({ name, type: fieldType(ORDER_FIELDS[name]!) })),
    { name: 'updated_at', type: 'timestamp' },
  ],
  pageKey: ['order_id'],
  relations: [],
};

/** Line-item events of orders (`Order Line Item Purchase`, ...), each naming its product. */
export const LINE_ITEMS_OBJECT: ExportObject = {
  name: 'line_items',
  from: '{db}.line_items',
  columns: [
    { name: 'order_id', type: 'string' },
    { name: 'line_item_id', type: 'string' },
    { name: 'event_id', type: 'string' },
    { name: 'svc_id', type: 'string' },
    { name: 'ts', type: 'timestamp' },
    { name: 'event', type: 'string' },
    { name: 'action', type: 'string' },
    { name: 'product_id', type: 'string' },
    { name: 'sku', type: 'string' },
    { name: 'price', type: 'number' },
    { name: 'quantity', type: 'number' },
    { name: 'discount', type: 'number' },
    { name: 'subtotal', type: 'number' },
  ],
  pageKey: ['order_id', 'line_item_id'],
  relations: [],
};

/** Every built-in object; custom objects of the schema catalog plug in with `with`. */
export const BUILT_IN_CATALOG = new ExportCatalog([
  CUSTOMERS_OBJECT,
  EVENTS_OBJECT,
  PRODUCTS_OBJECT,
  ORDERS_OBJECT,
  LINE_ITEMS_OBJECT,
]);

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
