import { Module } from '@nestjs/common';
import { BuiltInExportCatalogs, ExportCatalogs } from './export-objects.js';
import { ExportsService } from './exports.service.js';

/** What the API needs to record export jobs; it never opens the analytic store. */
@Module({
  providers: [{ provide: ExportCatalogs, useClass: BuiltInExportCatalogs }, ExportsService],
  exports: [ExportsService],
})
export class ExportsApiModule {}
