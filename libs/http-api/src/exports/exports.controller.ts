import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBody, ApiExtraModels, ApiHeader, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { Principal } from '@cdp/accounts';
import { ExportsService, type ExportDetail, type ExportRecord } from '@cdp/exports';
import { Auth } from '@cdp/http-common';
import { SegmentsService } from '@cdp/segments';
import { CurrentPrincipal } from '../auth/principal.js';
import {
  AndFilterDto,
  ComparisonDto,
  OrFilterDto,
  NotFilterDto,
  SelectRequestDto,
  WholeObjectsRequestDto,
} from './export-request.dto.js';
import { ExportRequestValidation } from './export-request.pipe.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';

/** spec "Exports (beta)": the API records the job; an exporter runs it. */
@ApiTags('exports')
@ApiHeader({ name: 'x-api-key', required: true })
@RateLimit('exports')
@ApiExtraModels(
  ComparisonDto,
  AndFilterDto,
  OrFilterDto,
  NotFilterDto,
  WholeObjectsRequestDto,
  SelectRequestDto,
)
@Controller('v3/exports')
export class ExportsController {
  constructor(
    private readonly exports: ExportsService,
    private readonly segments: SegmentsService,
  ) {}

  @Post()
  @HttpCode(202)
  @Auth('private')
  @ApiBody({
    description: 'whole objects (every one when `objects` is absent), or one select with a nested filter',
    schema: {
      oneOf: [{ $ref: getSchemaPath(WholeObjectsRequestDto) }, { $ref: getSchemaPath(SelectRequestDto) }],
    },
  })
  @ApiResponse({ status: 202, description: 'the export record (state pending)' })
  @ApiResponse({ status: 422, description: 'a requested object is already being exported' })
  async request(
    @Body(ExportRequestValidation) detail: ExportDetail,
    @CurrentPrincipal() principal: Principal,
  ): Promise<ExportRecord> {
    // 404 `unable to locate segment <id>` for a segment the account does not have.
    const members = await this.segments.exportMembers(principal.account, detail);
    return this.exports.request(principal.account, principal.trackerId, detail, undefined, members);
  }

  @Get()
  @Auth('private')
  @ApiResponse({ status: 200, description: 'the pending and running exports' })
  inFlight(@CurrentPrincipal() principal: Principal): Promise<ExportRecord[]> {
    return this.exports.inFlight(principal.account);
  }

  @Get(':id')
  @Auth('private')
  @ApiResponse({ status: 200, description: 'the export record' })
  get(@Param('id') id: string, @CurrentPrincipal() principal: Principal): Promise<ExportRecord> {
    return this.exports.get(principal.account, id);
  }
}
