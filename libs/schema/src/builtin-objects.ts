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

/** A built-in object: made by `svc`, named as shown, stored in the account's table of its name. */
function builtin(name: string, alias: string, fields: FieldDef[], relations: RelationDef[]): ObjectDef {
  return { name, display_name: title(name), alias, created_by: 'svc', table: name, fields, relations };
}

/** Whose and when: the fields of what a customer did (an event, an order), beside its relation to the customer. */
const customerAndTime = (): FieldDef[] => [
  field('svc_id', 'string', 'Internal Customer ID'),
  field('ts', 'timestamp', 'Timestamp'),
];

const toCustomer = relation('customer', 'Customer', 'customers', [{ parent: 'svc_id', child: 'svc_id' }]);
const toProduct = relation('product', 'Product', 'products', [{ parent: 'product_id', child: 'product_id' }]);

export const BUILTIN_OBJECTS: readonly ObjectDef[] = [
  builtin(
    'customers',
    'customer',
    // svc_id is the platform's internal customer id (docs/api-notes.md "Internal customer id").
    [
      field('svc_id', 'string', 'Internal Customer ID', true),
      ...Object.entries(CUSTOMER_FIELDS).map(([n, t]) => field(n, fromDomain(t), title(n))),
    ],
    [],
  ),
  builtin(
    'events',
    'event',
    [
      field('event_id', 'string', 'Event ID', true),
      ...customerAndTime(),
      ...plain(['type', 'action', 'channel']),
      ...EVENT_COLUMN_FIELDS.map((n) => field(n, fromDomain(EVENT_DATA_FIELDS[n]!), title(n))),
    ],
    [toProduct, toCustomer],
  ),
  builtin(
    'products',
    'product',
    [
      field('product_id', 'string', 'Product ID', true),
      ...plain(['category', 'name', 'brand', 'sku', 'upc', 'image_url']),
      field('price', 'number', 'Price'),
      field('parent_product_id', 'string', 'Parent Product ID'),
    ],
    [
      relation('parent_product', 'Parent Product', 'products', [
        { parent: 'parent_product_id', child: 'product_id' },
      ]),
    ],
  ),
  builtin(
    'orders',
    'order',
    [
      field('order_id', 'string', 'Order ID', true),
      ...customerAndTime(),
      ...plain(['total', 'subtotal', 'discount', 'shipping', 'tax'], 'number'),
      ...plain(['coupon_code', 'ship_address', 'bill_address', 'email', 'phone', 'name', 'first_name']),
      ...plain(['last_name']),
    ],
    [toCustomer],
  ),
  builtin(
    'line_items',
    'line_item',
    // One line per product of an order (spec "Order fields": items).
    [
      field('order_id', 'string', 'Order ID', true),
      field('product_id', 'string', 'Product ID', true),
      field('sku', 'string', 'SKU'),
      ...plain(['price', 'quantity', 'discount', 'subtotal'], 'number'),
    ],
    [toProduct],
  ),
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
