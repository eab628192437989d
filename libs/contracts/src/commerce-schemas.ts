import { EVENT_DATA_FIELDS, ORDER_FIELDS, PRODUCT_FIELDS } from '@cdp/domain';
import {
  MAX_STRING,
  eventHeadProperties,
  fieldsOf,
  identifierProperties,
  nullable,
  orderSchema,
  profileAttributesSchema,
  str,
} from './schemas.js';

type Schema = Record<string, unknown>;

const requiredId = { type: 'string', minLength: 1, maxLength: MAX_STRING };

/** A product-feed record (spec "Product fields"): `product_id` required, the rest typed and optional. */
export const productSchema: Schema = {
  type: 'object',
  required: ['product_id'],
  properties: { ...fieldsOf(PRODUCT_FIELDS), product_id: requiredId },
};

/** An order entity update: `order_id` required, order fields typed (spec "Entities (v2)"). */
export const orderUpdateSchema: Schema = {
  type: 'object',
  required: ['order_id'],
  properties: { ...fieldsOf(ORDER_FIELDS), order_id: requiredId },
};

/**
 * `POST /v2/entities`: `{type: customer|product|order, data: {...}}`, `data` checked by the schema of its
 * type (customer fields as in `POST /v3/profiles`).
 */
export const entitySchema: Schema = {
  type: 'object',
  required: ['type', 'data'],
  properties: {
    type: { type: 'string', enum: ['customer', 'product', 'order'] },
    data: { type: 'object' },
  },
  allOf: [
    { if: typeIs('customer'), then: { properties: { data: profileAttributesSchema } } },
    { if: typeIs('product'), then: { properties: { data: productSchema } } },
    { if: typeIs('order'), then: { properties: { data: orderUpdateSchema } } },
  ],
};

function typeIs(type: string): Schema {
  return { required: ['type'], properties: { type: { const: type } } };
}

/**
 * `POST /v2/events` (spec "Entities (v2)"): `{type, data: {action, <identifiers>, <event data fields>,
 * order}}`: identifiers and the action sit among the data fields. The action may also sit beside the
 * type, and identifiers in an `identifiers` object, as in v3.
 */
export const v2EventSchema: Schema = {
  type: 'object',
  required: ['type', 'data'],
  properties: {
    ...eventHeadProperties,
    data: {
      type: 'object',
      properties: {
        ...fieldsOf(EVENT_DATA_FIELDS),
        order: nullable(orderSchema),
        action: nullable(str),
        email: nullable(str),
        customer_id: nullable(str),
        ...identifierProperties.properties,
      },
      patternProperties: identifierProperties.patternProperties,
    },
  },
};
