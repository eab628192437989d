/**
 * The type of a built-in field's value, as the spec's tables list them. Events, orders and products
 * each declare their fields with it, so it sits apart from all three.
 */
export type FieldType = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'timestamp';
