/**
 * The body pipe of `POST /v3/exports`, for the console's exports page (libs/console-api), which starts
 * an export with the same checks and errors.
 */
export { ExportRequestValidation } from './export-request.pipe.js';
