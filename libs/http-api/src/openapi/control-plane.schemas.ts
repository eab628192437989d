import { MAX_BATCH, MAX_STRING, batchOf } from '@cdp/contracts';
import { CUSTOM_FIELD_TYPES } from '@cdp/domain';
import { EXPORT_DELIMITERS, EXPORT_FORMATS, FILTER_OPERATORS } from '@cdp/exports';
import { MAX_DESCRIPTION_LENGTH, MAX_DISPLAY_NAME_LENGTH, MAX_NAME_LENGTH } from '@cdp/schema';

/**
 * JSON schemas of the control-plane bodies for the OpenAPI document. The routes validate with their
 * own parsers (libs/schema, libs/exports, the subscriptions validator); these describe the same
 * shapes so that a client (or the fuzz suite) generated from the document sends the right fields.
 */
type Schema = Record<string, unknown>;

const snakeName: Schema = {
  type: 'string',
  pattern: '^[a-z][a-z0-9]*(_[a-z0-9]+)*$',
  maxLength: MAX_NAME_LENGTH,
};
const displayName: Schema = { type: 'string', minLength: 1, maxLength: MAX_DISPLAY_NAME_LENGTH };

export const fieldDefSchema: Schema = {
  type: 'object',
  required: ['name', 'type', 'display_name'],
  properties: {
    name: snakeName,
    type: { type: 'string', enum: [...CUSTOM_FIELD_TYPES] },
    display_name: displayName,
    description: { type: 'string', maxLength: MAX_DESCRIPTION_LENGTH },
    primary: { type: 'boolean', description: 'only when the object is created' },
  },
};

export const relationDefSchema: Schema = {
  type: 'object',
  required: ['name', 'display_name', 'child_object', 'join_fields'],
  properties: {
    name: snakeName,
    display_name: displayName,
    child_object: snakeName,
    join_fields: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['parent', 'child'],
        properties: { parent: snakeName, child: snakeName },
      },
    },
  },
};

export const objectDefSchema: Schema = {
  type: 'object',
  required: ['name', 'display_name', 'fields'],
  properties: {
    name: { ...snakeName, description: 'plural' },
    display_name: displayName,
    alias: { ...snakeName, description: 'singular' },
    fields: { type: 'array', minItems: 1, items: fieldDefSchema },
    relations: { type: 'array', items: relationDefSchema },
  },
};

export const newFieldsSchema: Schema = {
  oneOf: [
    fieldDefSchema,
    {
      type: 'object',
      required: ['fields'],
      properties: { fields: { type: 'array', minItems: 1, items: fieldDefSchema } },
    },
  ],
};

/** A record of a custom object: its fields by name, the primary key among them. */
export const customRecordsSchema: Schema = batchOf({ type: 'object', additionalProperties: true });

const comparison: Schema = {
  type: 'object',
  required: ['field', 'operator', 'value'],
  properties: {
    field: { type: 'string' },
    operator: { type: 'string', enum: [...FILTER_OPERATORS] },
    value: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }] },
  },
};

const exportFormat = {
  format: { type: 'string', enum: [...EXPORT_FORMATS] },
  delimiter: { type: 'string', enum: [...EXPORT_DELIMITERS] },
};

/** Whole objects (all of them when `objects` is absent), or one `select`: never both. */
export const exportRequestSchema: Schema = {
  oneOf: [
    {
      type: 'object',
      properties: { ...exportFormat, objects: { type: 'array', minItems: 1, items: snakeName } },
    },
    {
      type: 'object',
      required: ['select'],
      properties: { ...exportFormat, select: exportSelectSchema() },
    },
  ],
};

function exportSelectSchema(): Schema {
  return {
    type: 'object',
    required: ['object', 'fields'],
    properties: {
      object: snakeName,
      fields: { type: 'array', minItems: 1, items: { type: 'string' } },
      filter: {
        description: 'a comparison, or {and: [...]} / {or: [...]} nesting filters',
        oneOf: [
          comparison,
          {
            type: 'object',
            required: ['and'],
            properties: { and: { type: 'array', minItems: 1, items: comparison } },
          },
          {
            type: 'object',
            required: ['or'],
            properties: { or: { type: 'array', minItems: 1, items: comparison } },
          },
        ],
      },
      sorts: {
        type: 'array',
        items: {
          type: 'object',
          required: ['field'],
          properties: { field: { type: 'string' }, order: { type: 'string', enum: ['asc', 'desc'] } },
        },
      },
    },
  };
}

const email: Schema = { type: 'string', maxLength: MAX_STRING, format: 'email' };
const subscriptionUpdate: Schema = {
  oneOf: [
    {
      type: 'object',
      required: ['list_id', 'email', 'subscribed'],
      properties: {
        list_id: { type: 'string', minLength: 1, maxLength: MAX_STRING },
        email,
        subscribed: { type: 'boolean' },
      },
    },
    { type: 'object', required: ['opted_in', 'email'], properties: { opted_in: { type: 'boolean' }, email } },
  ],
};

export const subscriptionsSchema: Schema = {
  oneOf: [subscriptionUpdate, { type: 'array', items: subscriptionUpdate, minItems: 1, maxItems: MAX_BATCH }],
};
