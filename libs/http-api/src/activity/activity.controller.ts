import { Controller, Get, Param, Query, UsePipes } from '@nestjs/common';
import { ApiHeader, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Principal } from '@cdp/accounts';
import { ApiError } from '@cdp/contracts';
import { Auth } from '@cdp/http-common';
import { ActivityLog, type ActivityRecord } from '@cdp/loader';
import { CurrentPrincipal } from '../auth/principal.js';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { ActivityQueryDto, DEFAULT_ACTIVITY_PAGE } from './activity.dto.js';

/** spec "Bulk file ingestion": upload status, errors and a success entry per file, in the activity log. */
@ApiTags('activity')
@ApiHeader({ name: 'x-api-key', description: 'private key', required: true })
@Controller('v3/activity')
@UsePipes(EnvelopeValidation)
export class ActivityController {
  constructor(private readonly activity: ActivityLog) {}

  @Get()
  @Auth('private')
  @ApiResponse({ status: 200, description: '`{activity: [...], next?}`, newest first' })
  list(
    @CurrentPrincipal() principal: Principal,
    @Query() { limit, cursor }: ActivityQueryDto,
  ): Promise<{ activity: ActivityRecord[]; next?: string }> {
    const size = limit === undefined ? DEFAULT_ACTIVITY_PAGE : Number(limit);
    return this.activity.list(principal.account, size, cursor);
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
