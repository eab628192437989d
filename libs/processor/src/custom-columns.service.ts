import { Inject, Injectable } from '@nestjs/common';
import {
  CUSTOMER_FIELDS,
  EVENT_COLUMN_FIELDS,
  PRODUCT_FIELDS,
  toStoreTime,
  type CustomFieldType,
} from '@cdp/domain';
import { LOGGER, type Logger } from '@cdp/logger';
import { SchemaRegistry, type AccountSchema } from '@cdp/schema';
import { AnalyticStore, type StoreBatch } from '@cdp/store';

const BUILTIN_EVENT_COLUMNS = new Set(EVENT_COLUMN_FIELDS);
const BUILTIN_PRODUCT_FIELDS = new Set(Object.keys(PRODUCT_FIELDS));

/**
 * Custom fields become typed columns (DESIGN "Multi-tenancy"). Only the process that owns the store
 * may change it (with chDB that is the processor, never the API), so the columns are added here,
 * right before the first batch that carries a value for them: `ADD COLUMN IF NOT EXISTS`, once per
 * column and process. The API only lets through fields the schema defines, so a name this process
 * does not know yet is looked up in a fresh read of the schema.
 */
@Injectable()
export class CustomColumns {
  private readonly applied = new Map<string, Set<string>>();

  constructor(
    private readonly registry: SchemaRegistry,
    private readonly store: AnalyticStore,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Readies the store for the custom fields of a batch and puts their values in the store's form
   * (custom timestamps: unix seconds to store time). A field no read of the schema knows is left out.
   */
  async prepare(account: string, batch: StoreBatch): Promise<void> {
    const eventNames = new Set<string>();
    for (const row of batch.events)
      for (const n in row.data) if (!BUILTIN_EVENT_COLUMNS.has(n)) eventNames.add(n);
    const customerNames = new Set<string>();
    for (const row of batch.customers)
      for (const n in row.attributes) if (!Object.hasOwn(CUSTOMER_FIELDS, n)) customerNames.add(n);
    const productNames = new Set<string>();
    for (const row of batch.products ?? [])
      for (const n in row.fields) if (!BUILTIN_PRODUCT_FIELDS.has(n)) productNames.add(n);
    if (eventNames.size === 0 && customerNames.size === 0 && productNames.size === 0) return;

    const events = await this.ensure(account, 'events', eventNames);
    for (const row of batch.events) {
      if (!Object.keys(row.data).some((n) => eventNames.has(n))) continue;
      row.data = toStoreForm(row.data, events, BUILTIN_EVENT_COLUMNS);
    }
    const customers = await this.ensure(account, 'customers', customerNames);
    const builtinCustomer = new Set(Object.keys(CUSTOMER_FIELDS));
    // Profile attributes are the hot state's own objects: the row gets a converted copy.
    for (const row of batch.customers)
      row.attributes = toStoreForm(row.attributes, customers, builtinCustomer);
    if (productNames.size === 0) return;
    // Product rows carry the merged product: values read back from the store are in its form already.
    const products = await this.ensure(account, 'products', productNames);
    for (const row of batch.products ?? [])
      row.fields = toStoreForm(row.fields, products, BUILTIN_PRODUCT_FIELDS);
  }

  /**
   * The types of the named custom fields of a built-in object, with their columns ensured in its table
   * (products, orders and line items use it the same way). Names the schema does not define are absent.
   */
  async ensure(
    account: string,
    object: string,
    names: ReadonlySet<string>,
  ): Promise<Map<string, CustomFieldType>> {
    const types = new Map<string, CustomFieldType>();
    if (names.size === 0) return types;
    let schema: AccountSchema = await this.registry.read(account);
    if ([...names].some((n) => !schema.customFields(object)[n]))
      schema = await this.registry.read(account, true);
    const fields = schema.customFields(object);
    for (const n of names) {
      const type = fields[n];
      if (type) types.set(n, type);
      else
        this.logger.warn(
          { account, object, field: n },
          'a value for a field the schema does not define was left out',
        );
    }
    const table = schema.object(object)?.table;
    if (!table) return new Map();
    const key = `${account}/${table}`;
    const done = this.applied.get(key) ?? new Set<string>();
    const missing = [...types].filter(([n]) => !done.has(n)).map(([name, type]) => ({ name, type }));
    if (missing.length) {
      await this.store.addColumns(account, table, missing);
      for (const c of missing) done.add(c.name);
      this.applied.set(key, done);
    }
    return types;
  }
}

/** Keeps built-in and known custom fields, the latter in the store's form; drops the rest. */
function toStoreForm<V>(
  values: Record<string, V>,
  custom: Map<string, CustomFieldType>,
  builtin: Set<string>,
): Record<string, V | string> {
  const out: Record<string, V | string> = {};
  for (const [name, value] of Object.entries(values)) {
    if (builtin.has(name)) out[name] = value;
    else if (custom.get(name) === 'timestamp' && typeof value === 'number')
      out[name] = toStoreTime(value * 1000);
    else if (custom.has(name)) out[name] = value;
  }
  return out;
}
