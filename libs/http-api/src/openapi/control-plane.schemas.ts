import { batchOf } from '@cdp/contracts';

/**
 * The JSON schema of the one body no DTO class describes: the free-form records of custom objects
 * (checked by their object's rules, ObjectRecordsPipe). The other bodies are DTO classes.
 */
type Schema = Record<string, unknown>;

/** A record of a custom object: its fields by name, the primary key among them. */
export const customRecordsSchema: Schema = batchOf({ type: 'object', additionalProperties: true });
