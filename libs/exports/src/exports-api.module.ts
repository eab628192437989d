import { Module } from '@nestjs/common';
import { SchemaModule } from '@cdp/schema';
import { EXPORT_CATALOGS_PROVIDER } from './export-catalogs.provider.js';
import { ExportsService } from './exports.service.js';

/** What the API needs to record export jobs; it never opens the analytic store. */
@Module({
  imports: [SchemaModule],
  providers: [EXPORT_CATALOGS_PROVIDER, ExportsService],
  exports: [ExportsService],
})
export class ExportsApiModule {}
