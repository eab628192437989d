import { Module } from '@nestjs/common';
import { SchemaModule } from '@cdp/schema';
import { ExportCatalogs } from './export-objects.js';
import { SchemaExportCatalogs } from './schema-export-catalogs.js';

/**
 * The one module that provides ExportCatalogs (from the schema), imported by the API's and the worker's
 * modules alike: in the all-in-one process both are mounted, and Nest builds an imported module once, so
 * the process has one catalog source instead of one per importer.
 */
@Module({
  imports: [SchemaModule],
  providers: [{ provide: ExportCatalogs, useClass: SchemaExportCatalogs }],
  exports: [ExportCatalogs],
})
export class ExportCatalogsModule {}
