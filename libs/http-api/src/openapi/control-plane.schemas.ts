import { MAX_BATCH, MAX_STRING, batchOf } from '@cdp/contracts';
import { EXPORT_DELIMITERS, EXPORT_FORMATS, FILTER_OPERATORS } from '@cdp/exports';
import { MAX_NAME_LENGTH } from '@cdp/schema';

/**
 * JSON schemas of the bodies no DTO class describes: unions told apart by their fields and a
 * recursive filter, which their hand parsers read as pipes (the subscriptions validator,
 * parseExportRequest), and the free-form records of custom objects. The other bodies are DTO classes.
 */
type Schema = Record<string, unknown>;

const snakeName: Schema = {
  type: 'string',
  pattern: '^[a-z][a-z0-9]*(_[a-z0-9]+)*$',
  maxLength: MAX_NAME_LENGTH,
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
      description:
        "further members that are event fields (channel, page, source, …, not ts) are written to the update's " +
        'list/subscribe event',
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
