import { Module } from '@nestjs/common';
import { EXPORT_CATALOGS_PROVIDER } from './export-objects.js';
import { ExportsService } from './exports.service.js';

/** What the API needs to record export jobs; it never opens the analytic store. */
@Module({
  providers: [EXPORT_CATALOGS_PROVIDER, ExportsService],
  exports: [ExportsService],
})
export class ExportsApiModule {}
