import { Module } from '@nestjs/common';
import { ExportCatalogsModule } from './export-catalogs.module.js';
import { ExportsService } from './exports.service.js';

/** What the API needs to record export jobs; it never opens the analytic store. */
@Module({
  imports: [ExportCatalogsModule],
  providers: [ExportsService],
  exports: [ExportsService],
})
export class ExportsApiModule {}
