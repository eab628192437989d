export * from './export-objects.js';
export * from './export-record.js';
export * from './export-request.js';
export * from './select.compiler.js';
export * from './members.compiler.js';
export * from './exports.service.js';
export * from './exports-api.module.js';
export * from './schema-export-catalogs.js';
