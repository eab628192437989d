import { ExportCatalogs } from './export-objects.js';
import { SchemaExportCatalogs } from './schema-export-catalogs.js';

/** The one place that decides where catalogs come from, for the API and the worker alike: the schema. */
export const EXPORT_CATALOGS_PROVIDER = { provide: ExportCatalogs, useClass: SchemaExportCatalogs };
