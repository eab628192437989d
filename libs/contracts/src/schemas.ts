import {
  CUSTOMER_FIELDS,
  MAX_AMOUNT,
  EVENT_DATA_FIELDS,
  ORDER_FIELDS,
  ORDER_ITEM_FIELDS,
  type FieldType,
} from '@cdp/domain';

/**
 * JSON schemas of the ingestion bodies, generated from the domain's field tables so that the
 * validator, the OpenAPI document and the processor agree on one definition.
 */
export const MAX_STRING = 1024; // spec "Limits": strings at most 1024 characters
export const MAX_BATCH = 1000; // spec "Limits": 1000 events / profiles per request

type Schema = Record<string, unknown>;

/**
 * Marks a boolean of the data types table (0, 1, true, false, as JSON values or text: readBoolean); the
 * batch validator defines it, and the domain's normalizers read the value with the same rule.
 */
export const BOOLEAN_KEYWORD = 'x-boolean';

export const str: Schema = { type: 'string', maxLength: MAX_STRING };
export const nullable = (s: Schema): Schema => ({ anyOf: [s, { type: 'null' }] });

export function schemaOf(type: FieldType | 'boolean'): Schema {
  switch (type) {
    case 'string':
      return str;
    case 'integer':
      // Integers a double holds exactly, so the value stored (Int64) is the value sent.
      return { type: 'integer', minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER };
    case 'number':
      // Built-in amounts take any finite decimal (spec "Data types": `3.14159`); the 4-decimal limit is
      // for custom fields. The range keeps an order's running tally exact (orders.ts MAX_AMOUNT).
      return { type: 'number', minimum: -MAX_AMOUNT, maximum: MAX_AMOUNT };
    case 'boolean':
      return { [BOOLEAN_KEYWORD]: true };
    case 'object':
      return { type: 'object' };
    case 'timestamp':
      return { anyOf: [{ type: 'number' }, { type: 'string', maxLength: 64 }] };
  }
}

/** Identifier values are strings; only a push-token field (`*_push_tokens`, plural) may carry several. */
const identifierValue: Schema = nullable(str);
const pushTokensValue: Schema = nullable({
  anyOf: [str, { type: 'array', items: str, maxItems: 100 }],
});
const PUSH_TOKENS = '^.+_push_tokens$';

export const identifiersSchema: Schema = {
  type: 'object',
  patternProperties: { [PUSH_TOKENS]: pushTokensValue },
  additionalProperties: identifierValue,
};

/** Identifier fields among other fields (profile attributes): checked by name; other names pass. */
export const identifierProperties = {
  properties: { vuid: identifierValue, fs_user_id: identifierValue },
  patternProperties: { '^svc_alias_.+$': identifierValue, [PUSH_TOKENS]: pushTokensValue },
};

/** Typed fields of a field table, each nullable (every type allows null, spec "Data types"). */
export function fieldsOf(table: Readonly<Record<string, FieldType>>): Record<string, Schema> {
  return Object.fromEntries(Object.entries(table).map(([name, type]) => [name, nullable(schemaOf(type))]));
}

/** `data.order` of an order event (spec "Order fields"; items: product_id, price, quantity, discount, subtotal). */
export const orderSchema: Schema = {
  type: 'object',
  required: ['order_id'],
  properties: {
    ...fieldsOf(ORDER_FIELDS),
    order_id: { type: 'string', minLength: 1, maxLength: MAX_STRING },
    items: nullable({
      type: 'array',
      items: { type: 'object', properties: fieldsOf(ORDER_ITEM_FIELDS) },
    }),
  },
};

/** What an event has beside its data fields, in v3 and (where v2 accepts it there too) in v2. */
export const eventHeadProperties = {
  type: { type: 'string', minLength: 1, maxLength: MAX_STRING },
  action: nullable(str),
  identifiers: identifiersSchema,
};

export const eventSchema: Schema = {
  type: 'object',
  required: ['type', 'identifiers'],
  properties: {
    ...eventHeadProperties,
    data: {
      type: 'object',
      properties: { ...fieldsOf(EVENT_DATA_FIELDS), order: nullable(orderSchema) },
    },
  },
};

/** Profile attributes: customer fields typed, identifiers checked by name, other fields let through. */
export const profileAttributesSchema: Schema = {
  type: 'object',
  properties: Object.fromEntries(
    Object.entries(CUSTOMER_FIELDS)
      .map(([name, type]): [string, Schema] => [name, nullable(schemaOf(type))])
      .concat(Object.entries(identifierProperties.properties)),
  ),
  patternProperties: identifierProperties.patternProperties,
  // Fields the account has not defined are dropped, not rejected (spec "Custom objects and fields").
};

export const profileSchema: Schema = {
  type: 'object',
  required: ['attributes'],
  properties: { attributes: profileAttributesSchema },
};

/** A batch body: one record or an array of 1 to 1000 (for the OpenAPI document). */
export function batchOf(item: Schema): Schema {
  return { oneOf: [item, { type: 'array', items: item, minItems: 1, maxItems: MAX_BATCH }] };
}
