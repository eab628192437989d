import {
  CUSTOMERS,
  EVENTS,
  LINE_ITEMS,
  ORDERS,
  PRODUCTS,
  quotedName,
  storeColumns,
  type ColumnSpec,
  type ExportType,
  type StoreColumn,
  type TableDeclaration,
} from '@cdp/store';

/** The types an exported column has; they decide the Parquet type and how CSV writes the value. */
export type ColumnType = ExportType;

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
 * Columns the account's schema declares for an object, which the store may not hold yet: the store
 * gets a field's column with its first value, an account object's table with its first record. The
 * export has them added first, so a declared field is a column (empty) from the moment it exists.
 */
export interface DeclaredColumns {
  /** `fields`: custom fields of a built-in table; `object`: an account object's own table. */
  kind: 'fields' | 'object';
  table: string;
  columns: ColumnSpec[];
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
  /**
   * The time column whose month partitions the object's table (`partitionBy`): a select's filter on it
   * narrows the store's read to the months it can match (time-bound.ts).
   */
  timeColumn?: string;
  relations: ExportRelation[];
  declared?: DeclaredColumns;
}

/** A relation of one field each side: `parentObject.parent` = `childObject.child`. */
function joinedBy(
  parentObject: string,
  name: string,
  childObject: string,
  parent: string,
  child: string,
): ExportRelation & { parentObject: string } {
  return { parentObject, name, childObject, joinFields: [{ parent, child }] };
}

/**
 * The built-in relations (spec/NOTES.md "Built-in relations"). Each holds only when both objects
 * exist in the catalog, so adding products, orders or line items brings their relations along.
 */
export const BUILT_IN_RELATIONS: readonly (ExportRelation & { parentObject: string })[] = [
  joinedBy('events', 'product', 'products', 'product_id', 'product_id'),
  joinedBy('line_items', 'product', 'products', 'product_id', 'product_id'),
  joinedBy('products', 'parent_product', 'products', 'parent_product_id', 'product_id'),
  // Through the customer a record belongs to now, so a merged customer's history reaches its survivor.
  joinedBy('events', 'customer', 'customers', 'customer_svc_id', 'svc_id'),
  joinedBy('orders', 'customer', 'customers', 'customer_svc_id', 'svc_id'),
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

/**
 * A built-in table's export object, from its declaration (libs/store tables): the columns it lists,
 * typed by their store types (domain fields by their field types), its current rows (FINAL for a
 * table of versions) and its sorting key as the page key.
 */
export function exportObjectOf(table: TableDeclaration): ExportObject {
  const spec = table.export;
  if (!spec) throw new Error(`table ${table.name} is not exported`);
  const columns = storeColumns(table);
  const exported = spec.columns.flatMap((entry): ExportColumn[] => {
    if (typeof entry !== 'string')
      return [{ name: entry.name, type: 'string', expr: survivorOf(entry.survivorOf) }];
    const inGroup = columns.filter((c) => c.group === entry);
    const named = inGroup.length ? inGroup : columns.filter((c) => c.name === entry);
    if (named.length === 0) throw new Error(`table ${table.name} has no column ${entry}`);
    return named.map((c) => exportColumn(c));
  });
  const versioned = table.engine.startsWith('ReplacingMergeTree');
  const where = spec.where ? ` WHERE ${spec.where}` : '';
  return {
    name: table.name,
    from:
      versioned || where
        ? `(SELECT * FROM {db}.${table.name}${versioned ? ' FINAL' : ''}${where})`
        : `{db}.${table.name}`,
    columns: exported,
    pageKey: [...table.orderBy],
    ...(table.partitionBy ? { timeColumn: table.partitionBy } : {}),
    relations: [],
  };
}

/** Maps and arrays export as JSON text; names the engine reads as keywords are quoted. */
function exportColumn(column: StoreColumn): ExportColumn {
  const quoted = quotedName(column.name);
  if (/^(Map|Array)\(/.test(column.sql))
    return { name: column.name, type: 'string', expr: `toJSONString(${quoted})` };
  return quoted === column.name
    ? { name: column.name, type: column.exportType }
    : { name: column.name, type: column.exportType, expr: quoted };
}

/** Customers: the current snapshot of each. `svc_id` is the platform's internal customer id, the key events join on. */
export const CUSTOMERS_OBJECT = exportObjectOf(CUSTOMERS);
/** Events with their typed data columns; identifiers and the order payload as JSON text. */
export const EVENTS_OBJECT = exportObjectOf(EVENTS);
/** The product feed: the current version of each product (no history, spec "Product fields"). */
export const PRODUCTS_OBJECT = exportObjectOf(PRODUCTS);
/** Order summaries: running tallies, revenue and lifecycle flag, as of the latest change. */
export const ORDERS_OBJECT = exportObjectOf(ORDERS);
/** Line-item events of orders (`Order Line Item Purchase`, ...), each naming its product. */
export const LINE_ITEMS_OBJECT = exportObjectOf(LINE_ITEMS);

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
  /**
   * `fresh`: read the schema now rather than from a cache a moment old. An export request and its run
   * ask for it: a field declared just before (its 201 answered) is a column of the export, whichever
   * process runs it. Reads on a hot path (segment lookups) take the cached copy.
   */
  abstract forAccount(account: string, fresh?: boolean): Promise<ExportCatalog>;
}

export class BuiltInExportCatalogs extends ExportCatalogs {
  forAccount(): Promise<ExportCatalog> {
    return Promise.resolve(BUILT_IN_CATALOG);
  }
}
