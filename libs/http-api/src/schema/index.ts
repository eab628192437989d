/**
 * The schema API's request bodies and their pipes, for the console's own schema routes
 * (libs/console-api), which answer as `POST /v3/schema/objects` does.
 */
export { NewFieldsValidation, ObjectDefDto } from './schema.dto.js';
export { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
