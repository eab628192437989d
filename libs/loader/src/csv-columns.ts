import {
  CUSTOMER_FIELDS,
  EVENT_DATA_FIELDS,
  isIdentifierField,
  ORDER_FIELDS,
  ORDER_ITEM_FIELDS,
  PRODUCT_FIELDS,
  type FieldType,
} from '@cdp/domain';
import type { DataType } from './file-names.js';
import type { LoadContext } from './record-rules.js';

/** Where a CSV column's values go in the equivalent API payload, and how its text is read. */
export type Column =
  | { to: 'field'; name: string; type: FieldType }
  | { to: 'identifier'; name: string }
  | { to: 'top'; name: 'type' | 'action' }
  /** A custom field of the account: its text goes as is, read by the field's type like an API value. */
  | { to: 'custom'; name: string }
  | { to: 'order'; name: string; type: FieldType }
  | { to: 'item'; name: string; type: FieldType }
  | { to: 'dropped'; name: string };

/**
 * The columns of a header (spec "Bulk file ingestion" rules 2 and 4): exact technical names, custom
 * fields by theirs. A column the data type does not define is dropped and reported, as an unknown API
 * field is.
 */
export function planColumns(dataType: DataType, header: readonly string[], context: LoadContext): Column[] {
  return header.map((name) => column(dataType, name, context));
}

function column(dataType: DataType, name: string, context: LoadContext): Column {
  switch (dataType) {
    case 'customers':
      if (Object.hasOwn(CUSTOMER_FIELDS, name)) return { to: 'field', name, type: CUSTOMER_FIELDS[name]! };
      if (isIdentifierField(name, context.identifiers)) return { to: 'field', name, type: 'string' };
      if (Object.hasOwn(context.customers, name)) return { to: 'custom', name };
      return { to: 'dropped', name };
    case 'products':
      if (Object.hasOwn(PRODUCT_FIELDS, name)) return { to: 'field', name, type: PRODUCT_FIELDS[name]! };
      if (Object.hasOwn(context.products, name)) return { to: 'custom', name };
      return { to: 'dropped', name };
    case 'events':
      if (name === 'type' || name === 'action') return { to: 'top', name };
      if (isIdentifierField(name, context.identifiers)) return { to: 'identifier', name };
      if (Object.hasOwn(EVENT_DATA_FIELDS, name) && name !== 'order')
        return { to: 'field', name, type: EVENT_DATA_FIELDS[name]! };
      if (Object.hasOwn(context.events, name)) return { to: 'custom', name };
      return { to: 'dropped', name };
    case 'orders':
      return orderColumn(name, context);
  }
}

/**
 * Orders (rule 4): `action`, identifiers, the order's fields, `item_<field>` of each line's item; custom
 * order-level values are the account's custom event fields, by name or prefixed `order_` (rule 7).
 */
function orderColumn(name: string, context: LoadContext): Column {
  if (name === 'action') return { to: 'top', name };
  if (Object.hasOwn(ORDER_FIELDS, name)) return { to: 'order', name, type: ORDER_FIELDS[name]! };
  if (isIdentifierField(name, context.identifiers)) return { to: 'identifier', name };
  if (name.startsWith('item_')) {
    const field = name.slice('item_'.length);
    if (Object.hasOwn(ORDER_ITEM_FIELDS, field))
      return { to: 'item', name: field, type: ORDER_ITEM_FIELDS[field]! };
    return { to: 'dropped', name };
  }
  const custom = name.startsWith('order_') && !Object.hasOwn(context.events, name) ? name.slice(6) : name;
  if (Object.hasOwn(context.events, custom)) return { to: 'custom', name: custom };
  return { to: 'dropped', name };
}
