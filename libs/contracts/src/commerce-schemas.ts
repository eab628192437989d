import { ORDER_FIELDS, PRODUCT_FIELDS } from '@cdp/domain';
import { MAX_STRING, fieldsOf, identifiersSchema, nullable, orderSchema, str } from './schemas.js';

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

/** `POST /v2/entities`: `{type: customer|product|order, data: {...}}`. */
export const entitySchema: Schema = {
  type: 'object',
  required: ['type', 'data'],
  properties: {
    type: { type: 'string', enum: ['customer', 'product', 'order'] },
    data: { type: 'object' },
  },
};

/**
 * `POST /v2/events`: `{type, data: {action, <identifiers>, <data fields>, order}}` (spec "Entities
 * (v2)"); the action may also sit beside the type, as in v3.
 */
export const v2EventSchema: Schema = {
  type: 'object',
  required: ['type', 'data'],
  properties: {
    type: { type: 'string', minLength: 1, maxLength: MAX_STRING },
    action: nullable(str),
    identifiers: identifiersSchema,
    data: {
      type: 'object',
      properties: { action: nullable(str), order: nullable(orderSchema) },
    },
  },
};
