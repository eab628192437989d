import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiHeader, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Principal } from '@cdp/accounts';
import { ApiError } from '@cdp/contracts';
import { Auth } from '@cdp/http-common';
import { ActivityLog, type ActivityRecord } from '@cdp/loader';
import { CurrentPrincipal } from '../auth/principal.js';

/** spec "Bulk file ingestion": upload status, errors and a success entry per file, in the activity log. */
@ApiTags('activity')
@ApiHeader({ name: 'x-api-key', description: 'private key', required: true })
@Controller('v3/activity')
export class ActivityController {
  constructor(private readonly activity: ActivityLog) {}

  @Get()
  @Auth('private')
  @ApiQuery({ name: 'limit', required: false, description: '1 to 100 entries, 20 by default' })
  @ApiQuery({ name: 'cursor', required: false, description: "the previous page's `next`" })
  @ApiResponse({ status: 200, description: '`{activity: [...], next?}`, newest first' })
  list(
    @CurrentPrincipal() principal: Principal,
    @Query('limit') limit?: string,
    @Query('cursor') cursor?: string,
  ): Promise<{ activity: ActivityRecord[]; next?: string }> {
    const n = limit === undefined ? 20 : Number(limit);
    if (!Number.isInteger(n) || n < 1 || n > 100)
      throw ApiError.invalid([{ field: 'limit', reason: 'must be an integer from 1 to 100' }]);
    if (cursor !== undefined && !/^[A-Za-z0-9_-]{1,200}$/.test(cursor))
      throw ApiError.invalid([{ field: 'cursor', reason: "must be a previous page's next" }]);
    return this.activity.list(principal.account, n, cursor);
  }

  @Get(':id')
  @Auth('private')
  @ApiResponse({ status: 200, description: 'one file: state, counts, errors, progress while it runs' })
  async get(@Param('id') id: string, @CurrentPrincipal() principal: Principal): Promise<ActivityRecord> {
    const found = await this.activity.get(principal.account, id);
    if (!found) throw ApiError.notFound(`activity entry ${id} not found`);
    return found;
  }
}
