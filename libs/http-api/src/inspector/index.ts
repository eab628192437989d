/** The ingestion routes and their record kinds, for the console's rejection counts (libs/console-api). */
export { INGESTION_ROUTES } from './ingestion-routes.js';
export { parse as parseAnswer } from './inspector.tap.js';
