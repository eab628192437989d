import { BOOLEAN_REASON, readBoolean, type FieldType } from '@cdp/domain';

/**
 * A CSV value as the spec's data types table reads it (spec "Data types"): numbers in standard decimal
 * format, booleans `0`, `1`, `true`, `false`, timestamps as sent (ISO 8601 or epoch seconds, read by the
 * API's own rule). An empty field is null, which the caller leaves out.
 */
export function fromText(type: FieldType, text: string): { value: unknown } | { reason: string } {
  switch (type) {
    case 'number':
      return DECIMAL.test(text) ? { value: Number(text) } : { reason: 'must be a number' };
    case 'integer':
      return INTEGER.test(text) ? { value: Number(text) } : { reason: 'must be an integer' };
    case 'boolean': {
      const value = readBoolean(text);
      return value === undefined ? { reason: BOOLEAN_REASON } : { value };
    }
    default:
      return { value: text };
  }
}

const DECIMAL = /^-?(\d+(\.\d*)?|\.\d+)$/;
const INTEGER = /^-?\d+$/;
