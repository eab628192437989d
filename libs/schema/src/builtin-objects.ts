import { CUSTOMER_FIELDS, EVENT_COLUMN_FIELDS, EVENT_DATA_FIELDS, type CustomFieldType } from '@cdp/domain';
import type { FieldDef, JoinField, ObjectDef, RelationDef } from './schema.model.js';

/**
 * The objects every account has (spec "Resources and their fields"), with the fields of the spec's
 * tables and the built-in relations of spec/NOTES.md. Their fields are `auto` and made by `svc`.
 */
function field(name: string, type: CustomFieldType, display: string, primary = false): FieldDef {
  return { name, display_name: display, type, description: '', primary, auto: true, created_by: 'svc' };
}

function relation(name: string, display: string, child: string, join: JoinField[]): RelationDef {
  return { name, display_name: display, child_object: child, join_fields: join, created_by: 'svc' };
}

const title = (name: string) =>
  name
    .split('_')
    .map((w) => (w === 'id' ? 'ID' : w.charAt(0).toUpperCase() + w.slice(1)))
    .join(' ');

const plain = (names: string[], type: CustomFieldType = 'string') =>
  names.map((n) => field(n, type, title(n)));

const fromDomain = (type: string): CustomFieldType =>
  type === 'integer' || type === 'number' ? 'number' : type === 'boolean' ? 'boolean' : 'string';

const toCustomer = relation('customer', 'Customer', 'customers', [{ parent: 'svc_id', child: 'svc_id' }]);
const toProduct = relation('product', 'Product', 'products', [{ parent: 'product_id', child: 'product_id' }]);

export const BUILTIN_OBJECTS: readonly ObjectDef[] = [
  {
    name: 'customers',
    display_name: 'Customers',
    alias: 'customer',
    created_by: 'svc',
    table: 'customers',
    // svc_id is the platform's internal customer id (docs/api-notes.md "Internal customer id").
    fields: [
      field('svc_id', 'string', 'Internal Customer ID', true),
      ...Object.entries(CUSTOMER_FIELDS).map(([n, t]) => field(n, fromDomain(t), title(n))),
    ],
    relations: [],
  },
  {
    name: 'events',
    display_name: 'Events',
    alias: 'event',
    created_by: 'svc',
    table: 'events',
    fields: [
      field('event_id', 'string', 'Event ID', true),
      field('svc_id', 'string', 'Internal Customer ID'),
      field('ts', 'timestamp', 'Timestamp'),
      ...plain(['type', 'action', 'channel']),
      ...EVENT_COLUMN_FIELDS.map((n) => field(n, fromDomain(EVENT_DATA_FIELDS[n]!), title(n))),
    ],
    relations: [toProduct, toCustomer],
  },
  {
    name: 'products',
    display_name: 'Products',
    alias: 'product',
    created_by: 'svc',
    table: 'products',
    fields: [
      field('product_id', 'string', 'Product ID', true),
      ...plain(['category', 'name', 'brand', 'sku', 'upc', 'image_url']),
      field('price', 'number', 'Price'),
      field('parent_product_id', 'string', 'Parent Product ID'),
    ],
    relations: [
      relation('parent_product', 'Parent Product', 'products', [
        { parent: 'parent_product_id', child: 'product_id' },
      ]),
    ],
  },
  {
    name: 'orders',
    display_name: 'Orders',
    alias: 'order',
    created_by: 'svc',
    table: 'orders',
    fields: [
      field('order_id', 'string', 'Order ID', true),
      field('svc_id', 'string', 'Internal Customer ID'),
      field('ts', 'timestamp', 'Timestamp'),
      ...plain(['total', 'subtotal', 'discount', 'shipping', 'tax'], 'number'),
      ...plain(['coupon_code', 'ship_address', 'bill_address', 'email', 'phone', 'name', 'first_name']),
      ...plain(['last_name']),
    ],
    relations: [toCustomer],
  },
  {
    name: 'line_items',
    display_name: 'Line Items',
    alias: 'line_item',
    created_by: 'svc',
    table: 'line_items',
    // One line per product of an order (spec "Order fields": items).
    fields: [
      field('order_id', 'string', 'Order ID', true),
      field('product_id', 'string', 'Product ID', true),
      field('sku', 'string', 'SKU'),
      ...plain(['price', 'quantity', 'discount', 'subtotal'], 'number'),
    ],
    relations: [toProduct],
  },
];

/**
 * Field names an account may not give a built-in object: the store's own columns and, on customers,
 * the identifier fields (spec "Identifiers": vuid, svc_alias_*, *_push_tokens), which are not attributes.
 */
export const RESERVED_FIELD_NAMES: Readonly<Record<string, readonly string[]>> = {
  customers: ['version', 'msg_id', 'updated_at', 'vuid', 'identifiers'],
  events: ['msg_id', 'received_at', 'identifiers', 'order', 'data', 'order_id'],
  products: ['msg_id', 'updated_at', 'version'],
  orders: ['msg_id', 'updated_at', 'version', 'items'],
  line_items: ['msg_id', 'updated_at', 'version'],
};

/** Names the store uses for its own tables: no account object may take them. */
export const RESERVED_OBJECT_NAMES: readonly string[] = ['identity_links'];

/** The table of an account-created object: a prefix keeps it apart from the platform's tables. */
export function customObjectTable(name: string): string {
  return `obj_${name}`;
}
