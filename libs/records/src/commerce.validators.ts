import {
  BatchValidator,
  entitySchema,
  orderUpdateSchema,
  productSchema,
  v2EventSchema,
  type Invalid,
} from '@cdp/contracts';
import {
  isIdentifierField,
  normalizeOrderUpdate,
  normalizeProduct,
  readCustomFields,
  type CustomFields,
  type CustomIdentifierNames,
  type EventInput,
  type EventRecord,
  type OrderUpdateRecord,
  type ProductRecord,
  type ProfileRecord,
} from '@cdp/domain';
import { eventRule, type EventsContext } from './events.validator.js';
import { customerRule } from './profiles.validator.js';

const NO_IDS: CustomIdentifierNames = new Set();

type Fields = Record<string, unknown>;

/**
 * A product record: the spec's fields, and the account's custom product fields read by their type
 * (reported under `prefix + name`); fields neither defines are dropped.
 */
function productRule(
  input: Fields,
  index: number,
  custom: CustomFields,
  prefix: string,
): ProductRecord | Invalid[] {
  const values = readCustomFields(input, custom, prefix);
  if (values.invalids.length) return values.invalids.map((invalid) => ({ event: index, ...invalid }));
  return normalizeProduct(input, values.values);
}

/**
 * `POST /v3/objects/products` records (and the bulk loader's products files). The context is the
 * account's custom product fields.
 */
export const productsValidator = new BatchValidator<Fields, ProductRecord, CustomFields>(
  productSchema,
  'product',
  (input, index, custom) => productRule(input, index, custom, ''),
);

function orderUpdate(input: Fields, index: number, prefix: string): OrderUpdateRecord | Invalid[] {
  const record = normalizeOrderUpdate(input);
  if ('refused' in record) {
    return record.refused.map((field) => ({
      event: index,
      field: `${prefix}${field}`,
      reason:
        field === 'ts'
          ? "an order update cannot move the order's time; it is the time of its purchase event"
          : 'an order update changes fields only; subtotal, total and items move with order events',
    }));
  }
  return record;
}

/** `POST /v3/objects/orders` records: fields of orders that exist (checked against the order state). */
export const orderUpdatesValidator = new BatchValidator<Fields, OrderUpdateRecord>(
  orderUpdateSchema,
  'order',
  (input, index) => orderUpdate(input, index, ''),
);

export type EntityRecord =
  | { kind: 'profiles'; record: ProfileRecord }
  | { kind: 'products'; record: ProductRecord }
  | { kind: 'order-updates'; record: OrderUpdateRecord };

/** What entity records need of the account: its custom customer and product fields. */
export interface EntitiesContext {
  customers: CustomFields;
  products: CustomFields;
}

/** `POST /v2/entities` records: `{type, data}`, each `data` by the rules of its type. */
export const entitiesValidator = new BatchValidator<
  { type: string; data: Fields },
  EntityRecord,
  EntitiesContext
>(entitySchema, 'entity record', (input, index, context): EntityRecord | Invalid[] => {
  if (input.type === 'customer') {
    const record = customerRule(input.data, index, { custom: context.customers, customIds: NO_IDS }, 'data.');
    return Array.isArray(record) ? record : { kind: 'profiles', record };
  }
  if (input.type === 'product') {
    const record = productRule(input.data, index, context.products, 'data.');
    return Array.isArray(record) ? record : { kind: 'products', record };
  }
  const record = orderUpdate(input.data, index, 'data.');
  return Array.isArray(record) ? record : { kind: 'order-updates', record };
});

interface V2EventIn {
  type: string;
  action?: string | null;
  identifiers?: Fields;
  data: Fields;
}

/**
 * The v2 event shape as a v3 event: identifier fields and `action` are lifted out of `data` (spec
 * "Entities (v2)": `{type: order, data: {action, email, order: {...}}}`).
 */
export function v2ToV3(input: V2EventIn, customIds?: CustomIdentifierNames): EventInput {
  const identifiers: Fields = { ...(input.identifiers ?? {}) };
  const data: Fields = {};
  for (const [name, value] of Object.entries(input.data)) {
    if (name === 'action') continue;
    if (isIdentifierField(name, customIds)) identifiers[name] = value;
    else data[name] = value;
  }
  const action = input.data.action ?? input.action;
  const event: EventInput = { type: input.type, identifiers, data };
  if (typeof action === 'string') event.action = action;
  return event;
}

/** `POST /v2/events` records: converted to v3, then the rules of `POST /v3/events`; invalids name v2 paths. */
export const v2EventsValidator = new BatchValidator<V2EventIn, EventRecord, EventsContext>(
  v2EventSchema,
  'event',
  (input, index, context) => {
    const result = eventRule(v2ToV3(input, context.customIds), index, context);
    if (!Array.isArray(result)) return result;
    return result.map((invalid) =>
      typeof invalid.field === 'string' ? { ...invalid, field: v2Field(invalid.field, input) } : invalid,
    );
  },
);

/** A v3 event's field as the v2 caller sent it: identifiers and `action` sat in `data` (v2ToV3). */
function v2Field(field: string, input: V2EventIn): string {
  if (field === 'identifiers') return 'data';
  if (field === 'action') return input.action != null && input.data.action == null ? field : 'data.action';
  const identifier = /^identifiers\.(.+)$/.exec(field)?.[1];
  return identifier !== undefined && Object.hasOwn(input.data, identifier) ? `data.${identifier}` : field;
}
